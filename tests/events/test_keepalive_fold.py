"""Keepalives carry the response as folded so far, live and replayed (SPEC W8; issue 15 item 1).

A keepalive ``response.in_progress`` may fall after any event: between two deltas of
one part, between two items, after a call. Each one must carry exactly the output a
client has accumulated up to it, so that both kinds of client accumulator survive:
openai-python's ``ResponseStreamState`` (which reconciles the keepalive's items with
the ones it finished) and openai-node's (which *replaces* its snapshot with the
keepalive's response, reproduced by :func:`replace_fold`).
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncGenerator
from typing import Any, cast

import anyio
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai._models import construct_type_unchecked
from openai._types import omit
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import Response, ResponseStreamEvent

from accord.adapters.store import replay
from accord.engine.protocol import GenerationRequest
from accord.events.generation import Chunk, Finished, GenerationOutput
from accord.events.response import Opened, fold
from accord.events.wire import EventLog, ResponseInProgress, WireEvent
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import ParseStage
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.run import ResponseRun
from accord.pipeline.tools import tool_parser
from tests.events.replace_fold import MissingOutput, replace_fold
from tests.oracle import check_stream
from tests.parsers.json_tool_helpers import OFFERED

OPENED = Opened(
    response_id="resp_ka",
    created_at=1,
    model="m",
    echo={"metadata": {}, "tools": [], "tool_choice": "auto", "parallel_tool_calls": True},
)
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
#: Reasoning, a message, a call, and a message after the call: every kind of event.
TEXT = "<think>Plan the answer.</think>Let me check the weather." + CALL + "Done."


def _stages() -> tuple[ParseStage, ItemTracker]:
    counter = itertools.count()
    stage = ParseStage(reasoning_parser("qwen3")(None), tool_parser("hermes")(OFFERED))
    tracker = ItemTracker(new_id=lambda p: f"{p}_{next(counter)}", now=lambda: 2, tools=OFFERED)
    return stage, tracker


def _builtins(events: list[WireEvent]) -> list[dict[str, Any]]:
    return [cast(dict[str, Any], msgspec.to_builtins(e)) for e in events]


def keepalive_after_every_event(chunks: list[str]) -> tuple[list[dict[str, Any]], EventLog]:
    """The chain over ``chunks`` with a keepalive after the projection of every response event."""
    stage, tracker = _stages()
    log = EventLog()
    out: list[WireEvent] = []
    projected = 0

    def emit(wire: list[WireEvent]) -> None:
        nonlocal projected
        for event in wire:
            out.append(msgspec.structs.replace(event, sequence_number=len(out)))
        projected += len(wire)
        if not log.terminated:
            out.append(msgspec.structs.replace(log.keepalive(projected), sequence_number=len(out)))

    emit(log.append(OPENED))
    inputs: list[GenerationOutput] = [Chunk(text=c) for c in chunks]
    inputs.append(Finished(reason="stop", prompt_tokens=3))
    for generated in inputs:
        for segment in stage.feed(generated):
            for response_event in tracker.feed(segment):
                emit(log.append(response_event))
    return _builtins(out), log


def assert_clients_survive(events: list[dict[str, Any]]) -> None:
    """Both accumulators take the stream whole, and each keepalive equals the client's state."""
    final = check_stream(events)  # sequence numbers, one terminal, item fold, SDK fold
    # openai-python: no error, and its final response is response.completed's.
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=[], text_format=omit)
    for data in events:
        state.handle_event(construct_type_unchecked(type_=cast(Any, ResponseStreamEvent), value=data))
    completed = state._completed_response
    assert completed is not None
    as_sdk = Response.model_validate(completed.model_dump(exclude_none=True))
    assert as_sdk.model_dump() == Response.model_validate(final).model_dump()
    # openai-node: replacing the snapshot at every keepalive still folds to the final body.
    assert replace_fold(events) == final
    for i, event in enumerate(events):
        if i >= 2 and event["type"] == "response.in_progress":
            body = event["response"]
            assert body["status"] == "in_progress"
            assert "completed_at" not in body or body["completed_at"] is None
            assert body["output"] == replace_fold(events[:i])["output"], f"keepalive {i}"


def _chunked(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_a_keepalive_after_every_kind_of_event() -> None:
    events, _ = keepalive_after_every_event(_chunked(TEXT, 3))
    keepalives = [i for i, e in enumerate(events) if i >= 2 and e["type"] == "response.in_progress"]
    before = {events[i - 1]["type"] for i in keepalives}
    assert {
        "response.reasoning_text.delta",  # between deltas of a reasoning part
        "response.output_text.delta",  # between deltas of a message part
        "response.function_call_arguments.delta",  # inside a call
        "response.output_item.added",
        "response.content_part.added",
        "response.output_item.done",
    } <= before
    # Between items: after one item's done, before the next one's added; and after the call.
    between = [i for i in keepalives if events[i - 1]["type"] == "response.output_item.done"]
    assert any(events[i + 1]["type"] == "response.output_item.added" for i in between)
    assert any(events[i - 1]["item"]["type"] == "function_call" for i in between)
    kinds = [e["type"] for e in events if e["type"] != "response.in_progress"]
    assert kinds.count("response.output_item.done") == 4  # reasoning, message, call, message
    assert_clients_survive(events)


def test_the_opening_keepalive_is_the_created_response() -> None:
    events, _ = keepalive_after_every_event([])
    assert events[2]["type"] == "response.in_progress"
    assert events[2]["response"] == events[0]["response"]


@settings(max_examples=40, deadline=None)
@given(cuts=st.sets(st.integers(1, len(TEXT) - 1), max_size=20))
def test_any_chunking_keeps_every_keepalive_a_prefix_fold(cuts: set[int]) -> None:
    bounds = [0, *sorted(cuts), len(TEXT)]
    events, _ = keepalive_after_every_event([TEXT[a:b] for a, b in itertools.pairwise(bounds)])
    assert_clients_survive(events)


def test_a_keepalive_behind_the_fold_refolds_the_prefix() -> None:
    """The producer may fold ahead of the egress: a keepalive then carries the fold as sent."""
    events, log = keepalive_after_every_event(_chunked(TEXT, 5))
    live = [e["response"] for i, e in enumerate(events) if i >= 2 and e["type"] == "response.in_progress"]
    # Asked afterwards, with the whole log folded, each keepalive is the same object.
    again = [msgspec.to_builtins(log.keepalive(n).response) for n in log.projected[:-1]]
    assert again == live
    assert msgspec.to_builtins(fold(log.events).body()) == events[-1]["response"]


def test_a_stale_keepalive_breaks_a_replacing_client() -> None:
    """The accumulator of record fails on the bug issue 15 reported: the opening response mid-stream."""
    events, _ = keepalive_after_every_event(_chunked(TEXT, 4))
    opening = events[0]["response"]
    first_delta = next(i for i, e in enumerate(events) if e["type"].endswith("_text.delta"))
    stale = [
        *events[:first_delta],
        {"type": "response.in_progress", "response": opening},
        *events[first_delta:],
    ]
    with pytest.raises(MissingOutput, match="missing output at index 0"):
        replace_fold(stale)


class KeepaliveGate:
    """An engine that, after each chunk, waits until a keepalive went out behind it.

    It is driven by what the run emits (an observer), not by a clock, so every chunk
    is followed by at least one keepalive whatever the machine's speed.
    """

    def __init__(self, chunks: list[str]) -> None:
        self.chunks = chunks
        self.kept = 0
        self.last_was_keepalive = False
        self._wake = anyio.Event()

    # Engine
    @property
    def model_name(self) -> str:
        return "m"

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[GenerationOutput, None]:
        for chunk in self.chunks:
            mark = self.kept
            yield Chunk(text=chunk)
            while not (self.last_was_keepalive and self.kept > mark):
                await self._wake.wait()
        yield Finished(reason="stop", prompt_tokens=3)

    async def count_tokens(self, prompt: str) -> int:
        return len(prompt)

    async def aclose(self) -> None:
        return None

    # RunObserver
    def on_engine(self, event: GenerationOutput) -> None:
        return None

    def on_wire(self, event: WireEvent) -> None:
        if isinstance(event, ResponseInProgress) and event.sequence_number >= 2:
            self.kept += 1
            self.last_was_keepalive = True
            self._wake.set()
            self._wake = anyio.Event()
        else:
            self.last_was_keepalive = False


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_live_keepalives_carry_the_fold_and_replay_identically(backend: str) -> None:
    gate = KeepaliveGate(_chunked(TEXT, 6))
    stage, tracker = _stages()
    run = ResponseRun(
        engine=gate,
        request=GenerationRequest(prompt="p"),
        opened=OPENED,
        parse=stage,
        tracker=tracker,
        keepalive_interval=0.002,
        observers=[gate],
    )
    out: list[WireEvent] = []

    async def emit(events: list[WireEvent]) -> None:
        out.extend(events)

    anyio.run(run.run, emit, backend=backend)
    live = _builtins(out)
    assert gate.kept >= len(gate.chunks)
    assert run.keepalive_seqs == [
        e["sequence_number"] for e in live[2:] if e["type"] == "response.in_progress"
    ]
    assert_clients_survive(live)
    # GET ?stream=true: the stored log and keepalive numbers give back the same bytes.
    assert _builtins(replay(run.log.events, run.keepalive_seqs)) == live
