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

import anyio
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accord.adapters.store import replay
from accord.engine.protocol import EngineCapabilities, GenerationRequest
from accord.events.generation import Chunk, Finished, GenerationOutput
from accord.events.response import fold
from accord.events.wire import ResponseInProgress, WireEvent
from accord.pipeline.run import ResponseRun
from tests.events.replace_fold import MissingOutput, replace_fold
from tests.events.streams import (
    OPENED,
    TEXT,
    assert_clients_survive,
    builtins,
    chunked,
    keepalive_after_every_event,
    stages,
)


def test_a_keepalive_after_every_kind_of_event() -> None:
    events, _ = keepalive_after_every_event(chunked(TEXT, 3))
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
    events, log = keepalive_after_every_event(chunked(TEXT, 5))
    live = [e["response"] for i, e in enumerate(events) if i >= 2 and e["type"] == "response.in_progress"]
    # Asked afterwards, with the whole log folded, each keepalive is the same object.
    again = [msgspec.to_builtins(log.keepalive(n).response) for n in log.projected[:-1]]
    assert again == live
    assert msgspec.to_builtins(fold(log.events).body()) == events[-1]["response"]


def test_a_stale_keepalive_breaks_a_replacing_client() -> None:
    """The accumulator of record fails on the bug issue 15 reported: the opening response mid-stream."""
    events, _ = keepalive_after_every_event(chunked(TEXT, 4))
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

    @property
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities()

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
    gate = KeepaliveGate(chunked(TEXT, 6))
    stage, tracker = stages()
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
    live = builtins(out)
    assert gate.kept >= len(gate.chunks)
    assert run.keepalive_seqs == [
        e["sequence_number"] for e in live[2:] if e["type"] == "response.in_progress"
    ]
    assert_clients_survive(live)
    # GET ?stream=true: the stored log and keepalive numbers give back the same bytes.
    assert builtins(replay(run.log.events, run.keepalive_seqs)) == live
