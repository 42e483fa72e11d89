"""Client-side oracles: what a client folding the stream arrives at.

``sdk_fold`` runs the openai SDK's own stream accumulator (``ResponseStreamState``) over
the events, so any event order or identity it rejects raises here exactly as it would
in a client. ``client_fold`` is an independent fold of every delta kind (the SDK does
not accumulate reasoning or custom-tool input), used to compare the stream with the
``response.completed`` body item by item (SPEC W3).
"""

from __future__ import annotations

import copy
from typing import Any, cast

from openai._models import construct_type_unchecked
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import ResponseStreamEvent

TERMINAL = ("response.completed", "response.incomplete", "response.failed", "response.cancelled")


def sdk_fold(events: list[dict[str, Any]]) -> Any:
    """Feed the SDK accumulator; returns its final snapshot (raises what the SDK raises)."""
    state = ResponseStreamState(input_tools=[], text_format=_omit())
    for data in events:
        event = construct_type_unchecked(type_=cast(Any, ResponseStreamEvent), value=data)
        state.handle_event(event)
    return state._ResponseStreamState__current_snapshot  # type: ignore[attr-defined]


def _omit() -> Any:
    from openai._types import omit

    return omit


def client_fold(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The output items as a client rebuilds them from added + deltas (+ done for status)."""
    items: dict[int, dict[str, Any]] = {}
    for ev in events:
        t = ev["type"]
        if t == "response.output_item.added":
            assert ev["output_index"] not in items, "duplicate output index"
            items[ev["output_index"]] = copy.deepcopy(ev["item"])
        elif t == "response.content_part.added":
            item = items[ev["output_index"]]
            assert ev["item_id"] == item["id"]
            assert ev["content_index"] == len(item["content"])
            item["content"].append(copy.deepcopy(ev["part"]))
        elif t in ("response.output_text.delta", "response.reasoning_text.delta"):
            item = items[ev["output_index"]]
            assert ev["item_id"] == item["id"]
            item["content"][ev["content_index"]]["text"] += ev["delta"]
            if t == "response.output_text.delta":
                assert ev["logprobs"] == []
        elif t == "response.reasoning_summary_part.added":
            item = items[ev["output_index"]]
            assert ev["item_id"] == item["id"]
            assert ev["summary_index"] == len(item["summary"])
            item["summary"].append(copy.deepcopy(ev["part"]))
        elif t == "response.reasoning_summary_text.delta":
            items[ev["output_index"]]["summary"][ev["summary_index"]]["text"] += ev["delta"]
        elif t == "response.reasoning_summary_text.done":
            assert items[ev["output_index"]]["summary"][ev["summary_index"]]["text"] == ev["text"]
        elif t == "response.refusal.delta":
            items[ev["output_index"]]["content"][ev["content_index"]]["refusal"] += ev["delta"]
        elif t == "response.function_call_arguments.delta":
            item = items[ev["output_index"]]
            assert ev["item_id"] == item["id"]
            item["arguments"] += ev["delta"]
        elif t == "response.custom_tool_call_input.delta":
            items[ev["output_index"]]["input"] += ev["delta"]
        elif t in ("response.output_text.done", "response.reasoning_text.done"):
            assert items[ev["output_index"]]["content"][ev["content_index"]]["text"] == ev["text"]
        elif t == "response.function_call_arguments.done":
            assert items[ev["output_index"]]["arguments"] == ev["arguments"]
        elif t == "response.custom_tool_call_input.done":
            assert items[ev["output_index"]]["input"] == ev["input"]
        elif t == "response.output_item.done":
            item = items[ev["output_index"]]
            done = ev["item"]
            for key in ("id", "type", "call_id", "name"):
                assert item.get(key) == done.get(key), f"identity changed on {key}"
            item["status"] = done["status"]
            if "encrypted_content" in done:
                item["encrypted_content"] = done["encrypted_content"]
            assert item == done, (item, done)
    return [items[i] for i in sorted(items)]


def check_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Every stream invariant a client relies on; returns the terminal response body."""
    assert [e["sequence_number"] for e in events] == list(range(len(events))), "sequence numbers"
    assert events[0]["type"] == "response.created"
    assert events[1]["type"] == "response.in_progress"
    terminals = [i for i, e in enumerate(events) if e["type"] in TERMINAL]
    assert terminals == [len(events) - 1], "exactly one terminal event, last"
    for e in events:
        if e["type"] == "error":
            assert "error" not in e, "error events must be flat"
    final = events[-1]["response"]
    assert final["output"] == client_fold(events)
    sdk_fold(events)
    return cast(dict[str, Any], final)
