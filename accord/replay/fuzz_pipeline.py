"""``accord fuzz pipeline``: Hypothesis over the whole stage chain (SPEC R4).

Each example takes a model output from the parser corpus (any family, reasoning or tool stage, with the
tools and thinking switch the row declares; sometimes two rows of one family joined), cuts it into
chunks, and ends the generation one of five ways: normally, at the token limit, with an engine failure
report, with an engine exception, or with the client hanging up. The chain (parse -> items -> log ->
egress) runs it as a live request would, on asyncio or trio, and the result must hold the invariants:

* the stream audits clean (identity, order, numbering, one terminal, deltas = done = final text);
* the terminal event is the one the ending calls for (none after a hang-up);
* a completed or cut-off response has the same snapshot, usage aside, as the same output in one chunk.

A failure is shrunk by Hypothesis to the fewest cuts and the smallest choices, and printed with
everything needed to reproduce it; ``--seed`` makes a run repeatable.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import anyio
import msgspec
import structlog
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from accord.engine.protocol import GenerationRequest
from accord.events.generation import Chunk, EngineFailed, Finished, GenerationOutput
from accord.events.response import Opened
from accord.events.wire import WireEvent
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import ParseStage
from accord.pipeline.reasoning import reasoning_parser, reasoning_parser_names
from accord.pipeline.run import ResponseRun
from accord.pipeline.segments import (
    Content,
    MergedSegment,
    ParsedSegment,
    Reasoning,
    ToolCall,
    ToolSpec,
    merge_segments,
)
from accord.pipeline.tools import NoTools, tool_parser, tool_parser_names
from accord.replay._compare import comparable_response, difference
from accord.replay._replay_engine import TraceEngine
from accord.replay.audit import audit_events
from accord.replay.parser_fuzz import load_corpus
from accord.replay.progress import Counter

Ending = Literal["stop", "length", "failed", "raised", "disconnect"]
_TERMINAL_OF: dict[str, str | None] = {
    "stop": "response.completed",
    "length": "response.incomplete",
    "failed": "response.failed",
    "raised": "response.failed",
    "disconnect": None,
}
#: A reasoning family's tool format where the model family pairs them (and the name matches no tool parser).
_TOOLS_OF_REASONING = {"qwen3": "hermes", "deepseek_r1": "deepseek_v3"}


@dataclass(frozen=True)
class Family:
    """One model family's output: the parsers it needs, with what the request gave them."""

    reasoning: str
    tools: str
    thinking: bool | None
    offered: tuple[ToolSpec, ...]
    outputs: tuple[str, ...]
    name: str


def corpus_families() -> list[Family]:
    """Families from the packaged parser corpus, grouped by parsers, thinking switch and tools offered."""
    known_tools = set(tool_parser_names())
    known_reasoning = set(reasoning_parser_names())
    # Grouped by parsers, thinking switch and the tools offered (as JSON: tool schemas are dicts).
    groups: dict[tuple[str, str, bool | None, str], list[str]] = {}
    offered: dict[str, tuple[ToolSpec, ...]] = {}
    for corpus in load_corpus():
        for row in corpus.rows:
            if corpus.stage == "reasoning":
                if corpus.parser not in known_reasoning:
                    continue
                tools_name = (
                    corpus.parser
                    if corpus.parser in known_tools
                    else _TOOLS_OF_REASONING.get(corpus.parser, "none")
                )
                key = (corpus.parser, tools_name, row.thinking, "[]")
            else:
                if corpus.parser not in known_tools:
                    continue
                key = ("none", corpus.parser, None, msgspec.json.encode(row.tools).decode())
            offered.setdefault(key[3], () if corpus.stage == "reasoning" else tuple(row.tools))
            groups.setdefault(key, []).append(row.output)
    return [
        Family(reasoning=r, tools=t, thinking=th, offered=offered[o], outputs=tuple(outs), name=f"{r}+{t}")
        for (r, t, th, o), outs in sorted(groups.items(), key=lambda kv: repr(kv[0]))
    ]


@dataclass(frozen=True)
class Case:
    family: Family
    text: str
    cuts: tuple[int, ...]
    ending: Ending
    #: For failures and hang-ups: after how many chunks it happens.
    at: int

    def chunks(self) -> list[str]:
        bounds = [0, *self.cuts, len(self.text)]
        return [self.text[a:b] for a, b in itertools.pairwise(bounds) if b > a]

    def describe(self) -> str:
        f = self.family
        return (
            f"family {f.name} (reasoning={f.reasoning}, tools={f.tools}, thinking={f.thinking}, "
            f"{len(f.offered)} tools offered), ending {self.ending} at chunk {self.at}, "
            f"chunks {self.chunks()!r}"
        )


@st.composite
def cases(draw: st.DrawFn, families: Sequence[Family]) -> Case:
    family = draw(st.sampled_from(families))
    parts = draw(st.lists(st.sampled_from(family.outputs), min_size=1, max_size=2))
    text = "".join(parts)
    cuts = tuple(sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=8))))
    ending: Ending = draw(st.sampled_from(["stop", "stop", "length", "failed", "raised", "disconnect"]))
    count = len([0, *cuts]) if text else 0
    at = draw(st.integers(0, count)) if ending in ("failed", "raised", "disconnect") else count
    return Case(family, text, cuts, ending, at)


def _events(case: Case, chunks: list[str]) -> tuple[list[GenerationOutput], str | None, bool]:
    events: list[GenerationOutput] = [Chunk(text=c) for c in chunks]
    if case.ending == "stop" or case.ending == "length":
        events.append(Finished(reason=case.ending, prompt_tokens=5))
        return events, None, False
    events = events[: case.at]
    if case.ending == "failed":
        events.append(EngineFailed(failure="engine_error", message="the engine gave up", prompt_tokens=5))
        return events, None, False
    if case.ending == "raised":
        return events, "EngineCrashed", False
    return events, None, True


async def run_case(case: Case, chunks: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Run the chain on ``chunks`` ended as ``case`` says; the wire events and the final response."""
    f = case.family
    events, raise_name, silent = _events(case, chunks)
    engine = TraceEngine("m", events, raise_name=raise_name, go_silent=silent)
    engine.exhausted = anyio.Event()
    counter = itertools.count()
    # As the service does: without tools offered there is no tool parser to run.
    tools = tool_parser(f.tools)(f.offered) if f.offered else NoTools()
    run = ResponseRun(
        engine=engine,
        request=GenerationRequest(prompt="fuzz"),
        opened=Opened(response_id="resp_fuzz", created_at=0, model="m"),
        parse=ParseStage(reasoning_parser(f.reasoning)(f.thinking), tools),
        tracker=ItemTracker(new_id=lambda p: f"{p}_{next(counter)}", now=lambda: 0, tools=f.offered),
        keepalive_interval=3600.0,
    )
    wire: list[WireEvent] = []

    async def emit(batch: list[WireEvent]) -> None:
        wire.extend(batch)

    async with anyio.create_task_group() as tg:

        async def hang_up() -> None:
            assert engine.exhausted is not None
            await engine.exhausted.wait()
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()

        if silent:
            tg.start_soon(hang_up)
        await run.run(emit)
        tg.cancel_scope.cancel()
    final = msgspec.to_builtins(run.log.snapshot.body()) if run.log.terminated else None
    return [msgspec.to_builtins(e) for e in wire], final


def parsed_whole(family: Family, text: str) -> list[MergedSegment]:
    """What the family's parsers make of ``text`` in one piece, fed as the parse stage feeds them."""
    splitter = reasoning_parser(family.reasoning)(family.thinking)
    tools = tool_parser(family.tools)(family.offered) if family.offered else NoTools()
    segments: list[ParsedSegment] = []
    for seg in [*splitter.feed(text), *splitter.finish()]:
        segments.extend(tools.feed(seg.text) if isinstance(seg, Content) else [seg])
    segments.extend(tools.finish())
    return merge_segments(segments)


def _lost(family: Family, text: str, final: dict[str, Any]) -> str | None:
    """Invariant 5: the snapshot holds all the reasoning, text and calls the parsers found."""
    segments = parsed_whole(family, text)
    items = [i for i in final.get("output") or [] if isinstance(i, dict)]
    reasoning = "".join(
        p.get("text", "") for i in items if i.get("type") == "reasoning" for p in i.get("content") or []
    )
    wanted = "".join(s.text for s in segments if isinstance(s, Reasoning))
    if reasoning != wanted:
        return f"reasoning {reasoning!r}, the parsers found {wanted!r}"
    # Whitespace between items is the tracker's to drop (it is layout, not content).
    content = "".join(
        p.get("text", "") for i in items if i.get("type") == "message" for p in i.get("content") or []
    )
    found = "".join(s.text for s in segments if isinstance(s, Content))
    if "".join(content.split()) != "".join(found.split()):
        return f"message text {content!r}, the parsers found {found!r}"
    calls = sum(i.get("type") in ("function_call", "custom_tool_call") for i in items)
    wanted_calls = sum(isinstance(s, ToolCall) for s in segments)
    if calls != wanted_calls:
        return f"{calls} calls, the parsers found {wanted_calls}"
    return None


def check_case(case: Case, backend: str = "asyncio") -> str | None:
    """Run one case; ``None`` when every invariant holds, else what broke."""
    stream, final = anyio.run(run_case, case, case.chunks(), backend=backend)
    verdict = audit_events(stream)
    ignore = {"missing_terminal"} if case.ending == "disconnect" else set()
    defects = [f"{d.code}: {d.detail}" for d in verdict.defects if d.code not in ignore]
    if defects:
        return "audit: " + "; ".join(defects)
    expected = _TERMINAL_OF[case.ending]
    if verdict.terminal != expected:
        return f"terminal {verdict.terminal}, expected {expected}"
    if case.ending == "stop" and final is not None:
        lost = _lost(case.family, case.text, final)
        if lost is not None:
            return f"lost between the parsers and the snapshot: {lost}"
    if case.ending in ("stop", "length"):
        _, whole = anyio.run(run_case, case, [case.text] if case.text else [], backend=backend)
        changed = difference(comparable_response(whole, usage=False), comparable_response(final, usage=False))
        if changed is not None:
            return f"snapshot differs from the same output in one chunk: {changed}"
    return None


def run_pipeline_fuzz(
    seed_: int, examples: int, out: TextIO, *, families: Sequence[Family] | None = None
) -> int:
    """Fuzz the chain; print the shrunk failing case, if any. Exit status 0 (held) or 1 (broken)."""
    chosen = list(families) if families is not None else corpus_families()
    if not chosen:
        out.write("pipeline fuzz: no corpus outputs to fuzz with\n")
        return 2
    tried = 0
    progress = Counter("fuzz pipeline", total=examples)

    @seed(seed_)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(case=cases(chosen), backend=st.sampled_from(["asyncio", "trio"]))
    def property_(case: Case, backend: str) -> None:
        nonlocal tried
        tried += 1
        progress.step()
        problem = check_case(case, backend)
        if problem is not None:
            raise AssertionError(f"{case.describe()} on {backend}: {problem}")

    try:
        # Failures are what the fuzz provokes; the run's error logs would only bury the verdict.
        with structlog.testing.capture_logs():
            property_()
    except AssertionError as exc:
        progress.close()
        out.write(f"pipeline fuzz (seed {seed_}): invariant broken; minimal case:\n  {exc}\n")
        return 1
    progress.close()
    out.write(
        f"pipeline fuzz (seed {seed_}): {examples} examples over {len(chosen)} families held every invariant "
        f"({tried} runs including shrinking)\n"
    )
    return 0
