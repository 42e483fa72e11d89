"""The stage chain without HTTP: stream = projection, snapshot = fold, for any output and chunking.

ARCHITECTURE invariants 1, 3, 4, 5 checked with Hypothesis over random outputs of the
scripted engine (plain text, reasoning markup, failures, truncation) split at random
points. The oracle is a client-side fold of the stream plus the openai SDK accumulator.
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.engine.protocol import GenerationRequest
from accord.engine.scripted import Fail, Rule, Script, ScriptedEngine
from accord.events.response import Opened, fold
from accord.events.wire import WireEvent
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import ParseStage
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.run import ResponseRun
from accord.pipeline.tools import NoTools
from tests.oracle import check_stream

_to_builtins = msgspec.to_builtins


def make_run(rule: Rule, reasoning: str = "none", max_tokens: int | None = None) -> ResponseRun:
    counter = itertools.count()
    return ResponseRun(
        engine=ScriptedEngine(Script(rules=[rule])),
        request=GenerationRequest(prompt="a prompt of some words", max_tokens=max_tokens),
        opened=Opened(response_id="resp_test", created_at=1, model="m", echo={"metadata": {}}),
        parse=ParseStage(reasoning_parser(reasoning)(None), NoTools()),
        tracker=ItemTracker(new_id=lambda p: f"{p}_{next(counter)}", now=lambda: 2),
        keepalive_interval=0,
    )


def run_collect(run: ResponseRun, backend: str = "asyncio") -> list[dict[str, Any]]:
    out: list[WireEvent] = []

    async def emit(events: list[WireEvent]) -> None:
        out.extend(events)

    anyio.run(run.run, emit, backend=backend)
    return [_to_builtins(e) for e in out]


pieces = st.sampled_from(
    ["<think>", "</think>", "Hello", " ", "\n", "wörld", "<", "</", "think", ">", "😀", "a b c"]
)
outputs = st.lists(pieces, max_size=30).map("".join)


@st.composite
def chunked(draw: st.DrawFn) -> tuple[str, list[str]]:
    text = draw(outputs)
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=chunked(), reasoning=st.sampled_from(["none", "qwen3"]), backend=st.sampled_from(["asyncio", "trio"])
)
def test_stream_folds_to_completed_body_for_any_chunking(
    case: tuple[str, list[str]], reasoning: str, backend: str
) -> None:
    """Invariants 1, 3, 4, on both anyio backends: the client's fold of the stream is the completed body."""
    text, chunks = case
    run = make_run(Rule(output=text, chunks=chunks), reasoning)
    events = run_collect(run, backend)
    final = check_stream(events)
    assert final["status"] == "completed"
    assert final == _to_builtins(fold(run.log.events).body())


@settings(max_examples=100, deadline=None)
@given(case=chunked(), reasoning=st.sampled_from(["none", "qwen3"]))
def test_chunking_never_changes_the_result(case: tuple[str, list[str]], reasoning: str) -> None:
    """Invariant 2 through the chain: the whole output and any chunking give the same items."""
    text, chunks = case
    whole = run_collect(make_run(Rule(output=text, chunks=[text] if text else []), reasoning))[-1]["response"]
    split = run_collect(make_run(Rule(output=text, chunks=chunks), reasoning))[-1]["response"]
    assert whole["output"] == split["output"]


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200))
def test_every_character_lands_in_an_item(text: str) -> None:
    """Invariant 5: with no markup every generated character is in the message, untrimmed."""
    events = run_collect(make_run(Rule(output=text, chunk_chars=3)))
    final = check_stream(events)
    joined = "".join(p["text"] for item in final["output"] for p in item["content"])
    assert joined == (text if text.strip() else "")


@settings(max_examples=60, deadline=None)
@given(
    case=chunked(), after=st.integers(0, 6), kind=st.sampled_from(["engine_error", "context_length_exceeded"])
)
def test_failure_mid_stream_ends_with_error_then_failed(
    case: tuple[str, list[str]], after: int, kind: str
) -> None:
    """SPEC W5/W6: a failure at any point is `error` + `response.failed`, nothing after, items closed."""
    text, chunks = case
    run = make_run(Rule(output=text, chunks=chunks, fail=Fail(after_chunks=after, kind=kind)))  # type: ignore[arg-type]
    events = run_collect(run)
    final = check_stream(events)
    assert events[-2]["type"] == "error" and events[-2]["code"] == kind
    assert final["status"] == "failed" and final["error"]["code"] == kind
    assert all(item["status"] == "incomplete" for item in final["output"])


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet="ab c", min_size=1, max_size=80), budget=st.integers(0, 10))
def test_token_budget_ends_incomplete(text: str, budget: int) -> None:
    """SPEC W5: running out of max_output_tokens ends with response.incomplete."""
    run = make_run(Rule(output=text, chunk_chars=2), max_tokens=budget)
    events = run_collect(run)
    final = check_stream(events)
    assert final["usage"]["output_tokens"] <= budget
    if final["status"] == "incomplete":
        assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    else:
        assert final["status"] == "completed"


def test_reasoning_tokens_are_counted_from_reasoning_chunks() -> None:
    """SPEC W12: reasoning_tokens counts the generated tokens that fell in reasoning."""
    run = make_run(Rule(output="", chunks=["<think>", "one two", "</think>", "three"]), "qwen3")
    final = check_stream(run_collect(run))
    usage = final["usage"]
    assert usage["output_tokens"] == 3 + 3 + 4 + 1
    assert usage["output_tokens_details"]["reasoning_tokens"] == 3 + 3
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert usage["input_tokens_details"] == {"cached_tokens": 0, "cache_write_tokens": 0}
