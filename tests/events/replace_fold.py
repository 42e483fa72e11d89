"""A client accumulator that replaces its whole state with each lifecycle response.

openai-node's ``ResponseStream`` does this: on ``response.created``,
``response.in_progress`` (keepalives included) and the terminal events its snapshot
*becomes* the event's ``response``, and every later delta is applied to that object by
``output_index`` / ``content_index``, throwing when the index is missing ("missing
output at index 0"). This fold does the same, strictly: each delta must find its
item and part, and each ``done`` payload must equal what was accumulated. A keepalive
that carried anything but the fold as sent so far would break it.
"""

from __future__ import annotations

import copy
from typing import Any

LIFECYCLE = (
    "response.created",
    "response.queued",
    "response.in_progress",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "response.cancelled",
)

_TEXT_DELTAS = {
    "response.output_text.delta": ("content", "text"),
    "response.reasoning_text.delta": ("content", "text"),
    "response.refusal.delta": ("content", "refusal"),
    "response.reasoning_summary_text.delta": ("summary", "text"),
}
_TEXT_DONES = {
    "response.output_text.done": ("content", "text", "text"),
    "response.reasoning_text.done": ("content", "text", "text"),
    "response.refusal.done": ("content", "refusal", "refusal"),
    "response.reasoning_summary_text.done": ("summary", "text", "text"),
}


class MissingOutput(AssertionError):
    """The event names an item or part the snapshot does not have."""


def _output(snapshot: dict[str, Any], index: int) -> dict[str, Any]:
    output = snapshot["output"]
    if not 0 <= index < len(output):
        raise MissingOutput(f"missing output at index {index}")
    item: dict[str, Any] = output[index]
    return item


def _part(item: dict[str, Any], field: str, index: int) -> dict[str, Any]:
    parts = item.get(field) or []
    if not 0 <= index < len(parts):
        raise MissingOutput(f"missing {field} at index {index} of {item['id']}")
    part: dict[str, Any] = parts[index]
    return part


def replace_fold(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The snapshot after every event; raises where openai-node would throw."""
    snapshot: dict[str, Any] | None = None
    for event in events:
        kind = event["type"]
        if kind in LIFECYCLE:
            snapshot = copy.deepcopy(event["response"])
            continue
        if kind == "error":
            continue
        if snapshot is None:
            raise MissingOutput(f"{kind} before response.created")
        if kind == "response.output_item.added":
            if event["output_index"] != len(snapshot["output"]):
                raise MissingOutput(f"item added at {event['output_index']}, have {len(snapshot['output'])}")
            snapshot["output"].append(copy.deepcopy(event["item"]))
        elif kind == "response.output_item.done":
            item = _output(snapshot, event["output_index"])
            assert item["id"] == event["item"]["id"]
            snapshot["output"][event["output_index"]] = copy.deepcopy(event["item"])
        elif kind in ("response.content_part.added", "response.reasoning_summary_part.added"):
            item = _output(snapshot, event["output_index"])
            field, at = (
                ("content", "content_index")
                if kind.endswith("content_part.added")
                else ("summary", "summary_index")
            )
            if event[at] != len(item[field]):
                raise MissingOutput(f"{field} part added at {event[at]}, have {len(item[field])}")
            item[field].append(copy.deepcopy(event["part"]))
        elif kind in ("response.content_part.done", "response.reasoning_summary_part.done"):
            item = _output(snapshot, event["output_index"])
            field, at = (
                ("content", "content_index")
                if kind.endswith("content_part.done")
                else ("summary", "summary_index")
            )
            assert _part(item, field, event[at]) == event["part"], (item, event)
        elif kind in _TEXT_DELTAS:
            field, key = _TEXT_DELTAS[kind]
            at = "summary_index" if field == "summary" else "content_index"
            _part(_output(snapshot, event["output_index"]), field, event[at])[key] += event["delta"]
        elif kind in _TEXT_DONES:
            field, key, payload = _TEXT_DONES[kind]
            at = "summary_index" if field == "summary" else "content_index"
            assert _part(_output(snapshot, event["output_index"]), field, event[at])[key] == event[payload]
        elif kind == "response.function_call_arguments.delta":
            _output(snapshot, event["output_index"])["arguments"] += event["delta"]
        elif kind == "response.function_call_arguments.done":
            assert _output(snapshot, event["output_index"])["arguments"] == event["arguments"]
        elif kind == "response.custom_tool_call_input.delta":
            _output(snapshot, event["output_index"])["input"] += event["delta"]
        elif kind == "response.custom_tool_call_input.done":
            assert _output(snapshot, event["output_index"])["input"] == event["input"]
        else:
            raise AssertionError(f"unknown event {kind}")
    assert snapshot is not None
    return snapshot
