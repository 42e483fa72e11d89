"""Kimi-K2 calls keep the model's own ids (docs/model-formats.md B9)."""

from __future__ import annotations

import itertools

import msgspec

from accord.events.generation import Finished
from accord.events.response import Opened, ResponseEvent, fold
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import End
from accord.pipeline.segments import AbandonedCall, ToolCall, merge_segments
from tests.parsers.json_tool_helpers import OFFERED, parser

SB, SE = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CB, CE, ARG = "<|tool_call_begin|>", "<|tool_call_end|>", "<|tool_call_argument_begin|>"


def test_model_ids_become_the_response_call_ids() -> None:
    """The model expects ``functions.get_weather:0`` on the tool result, so it is the call_id."""
    text = (
        SB
        + f'{CB}functions.get_weather:0{ARG}{{"city": "Beijing"}}{CE}'
        + f"{CB}functions.get_time:1{ARG}{{}}{CE}"
        + SE
    )
    p = parser("kimi_k2")
    segments = p.feed(text) + p.finish()
    counter = itertools.count()
    tracker = ItemTracker(new_id=lambda prefix: f"{prefix}_{next(counter)}", now=lambda: 0, tools=OFFERED)
    events: list[ResponseEvent] = [Opened(response_id="r", created_at=0, model="m")]
    for seg in segments:
        events += tracker.feed(seg)
    end = End(outcome=Finished(reason="stop", prompt_tokens=0), output_tokens=0, reasoning_tokens=0)
    events += tracker.feed(end)
    items = [msgspec.to_builtins(item) for item in fold(events).output()]
    assert [(i["name"], i["call_id"]) for i in items] == [
        ("get_weather", "functions.get_weather:0"),
        ("get_time", "functions.get_time:1"),
    ]


def test_calls_before_a_cut_off_section_survive() -> None:
    """dynamo #8208: a section cut by max_tokens lost every call; the complete ones are kept."""
    p = parser("kimi_k2")
    out = p.feed(SB + f'{CB}functions.get_time:0{ARG}{{}}{CE}{CB}functions.get_weather:1{ARG}{{"ci')
    out += p.finish()
    assert merge_segments(out) == [
        ToolCall(name="get_time", arguments="{}", call_id="functions.get_time:0"),
        AbandonedCall(name="get_weather", arguments='{"ci', call_id="functions.get_weather:1"),
    ]
