"""Streams for the event-log tests: the real chain, a keepalive after every event, client checks."""

from __future__ import annotations

import itertools
from typing import Any, cast

import msgspec
from openai._models import construct_type_unchecked
from openai._types import omit
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import Response, ResponseStreamEvent

from accord.events.generation import Chunk, Finished, GenerationOutput
from accord.events.response import Opened
from accord.events.wire import EventLog, WireEvent
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import ParseStage
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.tools import tool_parser
from tests.events.replace_fold import replace_fold
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


def stages() -> tuple[ParseStage, ItemTracker]:
    counter = itertools.count()
    stage = ParseStage(reasoning_parser("qwen3")(None), tool_parser("hermes")(OFFERED))
    tracker = ItemTracker(new_id=lambda p: f"{p}_{next(counter)}", now=lambda: 2, tools=OFFERED)
    return stage, tracker


def builtins(events: list[WireEvent]) -> list[dict[str, Any]]:
    return [cast(dict[str, Any], msgspec.to_builtins(e)) for e in events]


def keepalive_after_every_event(
    chunks: list[str], *, opened: Opened = OPENED, finish: str = "stop"
) -> tuple[list[dict[str, Any]], EventLog]:
    """The chain over ``chunks`` with a keepalive after the projection of every response event."""
    stage, tracker = stages()
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

    emit(log.append(opened))
    inputs: list[GenerationOutput] = [Chunk(text=c) for c in chunks]
    inputs.append(Finished(reason=finish, prompt_tokens=3))  # type: ignore[arg-type]
    for generated in inputs:
        for segment in stage.feed(generated):
            for response_event in tracker.feed(segment):
                emit(log.append(response_event))
    return builtins(out), log


def assert_clients_survive(events: list[dict[str, Any]]) -> None:
    """Both accumulators take the stream whole, and each keepalive equals the client's state."""
    final = check_stream(events)  # sequence numbers, one terminal, item fold, SDK fold
    # openai-python: no error, and its final response is response.completed's.
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=[], text_format=omit)
    for data in events:
        state.handle_event(construct_type_unchecked(type_=cast(Any, ResponseStreamEvent), value=data))
    completed = state._completed_response
    assert (completed is not None) == (events[-1]["type"] == "response.completed")
    if completed is not None:
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


def chunked(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]
