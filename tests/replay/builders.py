"""Hand-written Responses streams in OpenAI's documented order (docs/spec.md A5), for the audit's tests.

Each builder returns the list of event objects a correct server sends; tests and the corpus mutate them
to plant one defect at a time. ``to_sse`` frames events the way accord does (SPEC W11).
"""

from __future__ import annotations

import copy
import json
from typing import Any

Event = dict[str, Any]


def _response(rid: str, status: str, output: list[Any], *, usage: bool) -> dict[str, Any]:
    response: dict[str, Any] = {
        "id": rid,
        "object": "response",
        "created_at": 1764000000,
        "model": "test-model",
        "status": status,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": None,
    }
    if usage:
        response["usage"] = {
            "input_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 30,
            "output_tokens_details": {"reasoning_tokens": 10},
            "total_tokens": 42,
        }
    return response


class StreamBuilder:
    """Builds one stream item by item; :meth:`finish` appends the terminal event and numbers everything."""

    def __init__(self, rid: str = "resp_1") -> None:
        self.rid = rid
        self.events: list[Event] = [
            {"type": "response.created", "response": _response(rid, "in_progress", [], usage=False)},
            {"type": "response.in_progress", "response": _response(rid, "in_progress", [], usage=False)},
        ]
        self.output: list[dict[str, Any]] = []

    def _index(self) -> int:
        return len(self.output)

    def reasoning(self, pieces: list[str], item_id: str = "rs_1") -> StreamBuilder:
        i, text = self._index(), "".join(pieces)
        base = {"id": item_id, "type": "reasoning", "summary": []}
        self.events.append(
            {
                "type": "response.output_item.added",
                "output_index": i,
                "item": {**base, "content": [], "status": "in_progress"},
            }
        )
        ref = {"item_id": item_id, "output_index": i, "content_index": 0}
        self.events.append(
            {"type": "response.content_part.added", **ref, "part": {"type": "reasoning_text", "text": ""}}
        )
        for p in pieces:
            self.events.append({"type": "response.reasoning_text.delta", **ref, "delta": p})
        self.events.append({"type": "response.reasoning_text.done", **ref, "text": text})
        self.events.append(
            {"type": "response.content_part.done", **ref, "part": {"type": "reasoning_text", "text": text}}
        )
        done = {**base, "content": [{"type": "reasoning_text", "text": text}], "status": "completed"}
        self.events.append({"type": "response.output_item.done", "output_index": i, "item": done})
        self.output.append(copy.deepcopy(done))
        return self

    def message(self, pieces: list[str], item_id: str = "msg_1") -> StreamBuilder:
        i, text = self._index(), "".join(pieces)
        base = {"id": item_id, "type": "message", "role": "assistant"}
        self.events.append(
            {
                "type": "response.output_item.added",
                "output_index": i,
                "item": {**base, "status": "in_progress", "content": []},
            }
        )
        ref = {"item_id": item_id, "output_index": i, "content_index": 0}
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        self.events.append({"type": "response.content_part.added", **ref, "part": empty})
        for p in pieces:
            self.events.append({"type": "response.output_text.delta", **ref, "delta": p, "logprobs": []})
        self.events.append({"type": "response.output_text.done", **ref, "text": text, "logprobs": []})
        part = {**empty, "text": text}
        self.events.append({"type": "response.content_part.done", **ref, "part": part})
        done = {**base, "status": "completed", "content": [part]}
        self.events.append({"type": "response.output_item.done", "output_index": i, "item": done})
        self.output.append(copy.deepcopy(done))
        return self

    def refusal(self, pieces: list[str], item_id: str = "msg_r") -> StreamBuilder:
        i, text = self._index(), "".join(pieces)
        base = {"id": item_id, "type": "message", "role": "assistant"}
        self.events.append(
            {
                "type": "response.output_item.added",
                "output_index": i,
                "item": {**base, "status": "in_progress", "content": []},
            }
        )
        ref = {"item_id": item_id, "output_index": i, "content_index": 0}
        self.events.append(
            {"type": "response.content_part.added", **ref, "part": {"type": "refusal", "refusal": ""}}
        )
        for p in pieces:
            self.events.append({"type": "response.refusal.delta", **ref, "delta": p})
        self.events.append({"type": "response.refusal.done", **ref, "refusal": text})
        part = {"type": "refusal", "refusal": text}
        self.events.append({"type": "response.content_part.done", **ref, "part": part})
        done = {**base, "status": "completed", "content": [part]}
        self.events.append({"type": "response.output_item.done", "output_index": i, "item": done})
        self.output.append(copy.deepcopy(done))
        return self

    def function_call(
        self, name: str, pieces: list[str], item_id: str = "fc_1", call_id: str = "call_1"
    ) -> StreamBuilder:
        i, args = self._index(), "".join(pieces)
        base = {"id": item_id, "type": "function_call", "call_id": call_id, "name": name}
        self.events.append(
            {
                "type": "response.output_item.added",
                "output_index": i,
                "item": {**base, "arguments": "", "status": "in_progress"},
            }
        )
        ref = {"item_id": item_id, "output_index": i}
        for p in pieces:
            self.events.append({"type": "response.function_call_arguments.delta", **ref, "delta": p})
        self.events.append({"type": "response.function_call_arguments.done", **ref, "arguments": args})
        done = {**base, "arguments": args, "status": "completed"}
        self.events.append({"type": "response.output_item.done", "output_index": i, "item": done})
        self.output.append(copy.deepcopy(done))
        return self

    def custom_call(
        self, name: str, pieces: list[str], item_id: str = "ctc_1", call_id: str = "call_c1"
    ) -> StreamBuilder:
        i, text = self._index(), "".join(pieces)
        base = {"id": item_id, "type": "custom_tool_call", "call_id": call_id, "name": name}
        self.events.append(
            {"type": "response.output_item.added", "output_index": i, "item": {**base, "input": ""}}
        )
        ref = {"item_id": item_id, "output_index": i}
        for p in pieces:
            self.events.append({"type": "response.custom_tool_call_input.delta", **ref, "delta": p})
        self.events.append({"type": "response.custom_tool_call_input.done", **ref, "input": text})
        done = {**base, "input": text}
        self.events.append({"type": "response.output_item.done", "output_index": i, "item": done})
        self.output.append(copy.deepcopy(done))
        return self

    def finish(self, status: str = "completed", *, error_code: str = "engine_error") -> list[Event]:
        response = _response(self.rid, status, copy.deepcopy(self.output), usage=status != "failed")
        if status == "completed":
            self.events.append({"type": "response.completed", "response": response})
        elif status == "incomplete":
            response["incomplete_details"] = {"reason": "max_output_tokens"}
            self.events.append({"type": "response.incomplete", "response": response})
        else:
            response["error"] = {"code": error_code, "message": "the engine failed"}
            self.events.append(
                {"type": "error", "code": error_code, "message": "the engine failed", "param": None}
            )
            self.events.append({"type": "response.failed", "response": response})
        return number(self.events)


def number(events: list[Event]) -> list[Event]:
    """Stamp sequence_number 0..n in order (as the one egress does)."""
    out = []
    for n, ev in enumerate(events):
        ev = {k: v for k, v in ev.items() if k != "sequence_number"}
        keys = list(ev)
        ev["sequence_number"] = n
        # Keep "type" first and the number second, as servers print them.
        out.append({"type": ev["type"], "sequence_number": n, **{k: ev[k] for k in keys if k != "type"}})
    return out


def to_sse(events: list[Event]) -> str:
    return "".join(
        f"event: {ev.get('type')}\ndata: {json.dumps(ev, ensure_ascii=False)}\n\n" for ev in events
    )
