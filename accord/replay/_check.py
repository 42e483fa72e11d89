"""The stream checker: one pass over a Responses event stream, then a verdict.

Sans-IO (STYLE 2): ``feed(data)`` takes one SSE ``data`` payload at a time and ``finish()`` returns the
defects. It keeps only per-item state and the text of each slot, so checking is linear in the stream.

The checks follow three sources: the documented order (docs/spec.md A5, SPEC W1-W5), the openai SDK
accumulator's own checks (A6, each marked ``breaks_sdk`` where the helper raises), and the comparison of
each item between what was streamed and what the terminal response's snapshot says (SPEC W2/W3) --
the class of defect the recorded production incidents were made of.
"""

from __future__ import annotations

from typing import Any

import msgspec

from accord.replay._finals import check_final
from accord.replay._items import KIND_ITEM_TYPE, Item, PartKey, compare_views, sdk_compatible, sdk_identity
from accord.replay.verdict import Defect

_decode = msgspec.json.Decoder().decode

TERMINALS = {
    "response.completed": "completed",
    "response.incomplete": "incomplete",
    "response.failed": "failed",
}
_LIFECYCLE = frozenset({"response.created", "response.queued", "response.in_progress", *TERMINALS})

# event type -> (text kind, name of the index field or None, name of the text field, is the done event)
_TEXT_EVENTS: dict[str, tuple[str, str | None, str, bool]] = {
    "response.output_text.delta": ("text", "content_index", "delta", False),
    "response.output_text.done": ("text", "content_index", "text", True),
    "response.refusal.delta": ("refusal", "content_index", "delta", False),
    "response.refusal.done": ("refusal", "content_index", "refusal", True),
    "response.reasoning_text.delta": ("reasoning", "content_index", "delta", False),
    "response.reasoning_text.done": ("reasoning", "content_index", "text", True),
    "response.reasoning_summary_text.delta": ("summary", "summary_index", "delta", False),
    "response.reasoning_summary_text.done": ("summary", "summary_index", "text", True),
    "response.function_call_arguments.delta": ("arguments", None, "delta", False),
    "response.function_call_arguments.done": ("arguments", None, "arguments", True),
    "response.custom_tool_call_input.delta": ("input", None, "delta", False),
    "response.custom_tool_call_input.done": ("input", None, "input", True),
}
# Events the SDK looks the item up for (and so raises on when it is missing or of the wrong type).
_SDK_LOOKUP = frozenset(
    {
        "response.output_text.delta",
        "response.output_text.done",
        "response.function_call_arguments.delta",
        "response.content_part.added",
    }
)
_PART_KIND = {"output_text": "text", "refusal": "refusal", "reasoning_text": "reasoning"}


class StreamChecker:
    """Checks one stream; feed every ``data`` payload in order, then call :meth:`finish`."""

    def __init__(self) -> None:
        self.defects: list[Defect] = []
        self.events = 0
        self.response_id: str | None = None
        self.terminal: str | None = None
        self.terminal_response: dict[str, Any] | None = None
        self.items: dict[int, Item] = {}
        #: Streamed output_index -> the final item it was paired with (after :meth:`finish`).
        self.finals: dict[int, dict[str, Any]] = {}
        self.notes: list[str] = []
        self._seen_codes: set[str] = set()
        self._expected_seq = 0
        self._seq_problems: dict[str, list[str]] = {}
        self._done_marker = False
        self._opened = False
        self._first = ""
        #: After an unreadable event the next sequence number is taken as given (the lost one had a number).
        self._resync = False
        self._logprobs_missing = 0
        self._unknown: set[str] = set()

    # -- reporting helpers

    def _flag(self, code: str, detail: str, *, breaks_sdk: bool = False, item: Item | None = None) -> None:
        """Report a defect; stream-level classes once per stream, item-level ones once per item."""
        if item is not None:
            if code in item.warned:
                return
            item.warned.add(code)
            self.defects.append(
                Defect(
                    code=code,
                    detail=detail,
                    output_index=item.index,
                    item_id=item.effective_id,
                    breaks_sdk=breaks_sdk,
                )
            )
            return
        if code in self._seen_codes:
            if breaks_sdk:
                # Keep the strongest statement: a later instance the SDK raises on replaces a milder first.
                for i, d in enumerate(self.defects):
                    if d.code == code and not d.breaks_sdk:
                        self.defects[i] = msgspec.structs.replace(d, breaks_sdk=True)
            return
        self._seen_codes.add(code)
        self.defects.append(Defect(code=code, detail=detail, breaks_sdk=breaks_sdk))

    # -- feeding

    def feed(self, data: str) -> None:
        self.events += 1
        n = self.events
        if data.startswith("[DONE]"):
            self._done_marker = True
            return
        try:
            obj = _decode(data)
        except msgspec.DecodeError as exc:
            self._flag("bad_event", f"event {n}: data is not JSON ({exc})", breaks_sdk=True)
            self._resync = True
            return
        self._feed(obj, n)

    def feed_object(self, obj: object) -> None:
        """Feed one already decoded event (trace files keep events as JSON objects)."""
        self.events += 1
        self._feed(obj, self.events)

    def _feed(self, obj: object, n: int) -> None:
        if not isinstance(obj, dict):
            self._flag("bad_event", f"event {n}: data is JSON but not an object")
            return
        if obj.get("error"):
            self._flag(
                "error_nested",
                f"event {n} ({obj.get('type')}): top-level {{'error': ...}} object; the SDK raises APIError",
                breaks_sdk=True,
            )
        kind = obj.get("type")
        if not isinstance(kind, str):
            self._flag("bad_event", f"event {n}: no string 'type'")
            return
        self._check_sequence(obj.get("sequence_number"), n, kind)
        if self._done_marker:
            self._flag("event_after_terminal", f"event {n} ({kind}) after data: [DONE], which ends the SDK")
            return
        if self.terminal is not None:
            if kind in TERMINALS:
                self._flag("multiple_terminal", f"event {n}: {kind} after {self.terminal}")
            else:
                self._flag("event_after_terminal", f"event {n} ({kind}) follows {self.terminal}")
            return
        if n == 1:
            self._first = kind
            if kind != "response.created":
                self._flag("first_not_created", f"first event is {kind}", breaks_sdk=True)
        elif (
            n == 2
            and self._first == "response.created"
            and kind not in ("response.in_progress", "response.queued")
        ):
            self._flag("event_order", f"event 2 is {kind}; response.in_progress follows response.created")
        if kind in _LIFECYCLE:
            self._lifecycle(kind, obj, n)
        elif kind == "response.output_item.added":
            self._item_added(obj, n)
        elif kind == "response.output_item.done":
            self._item_done(obj, n)
        elif kind in _TEXT_EVENTS:
            self._text_event(kind, obj, n)
        elif kind in ("response.content_part.added", "response.content_part.done"):
            self._part_event(kind, obj, n, summary=False)
        elif kind in ("response.reasoning_summary_part.added", "response.reasoning_summary_part.done"):
            self._part_event(kind, obj, n, summary=True)
        elif kind == "error":
            if not isinstance(obj.get("message"), str) and not obj.get("error"):
                self._flag("bad_event", f"event {n}: error event without a message")
        else:
            self._unknown.add(kind)

    def _check_sequence(self, seq: object, n: int, kind: str) -> None:
        if self._resync and isinstance(seq, int):
            self._resync = False
            self._expected_seq = seq
        if not isinstance(seq, int) or isinstance(seq, bool):
            self._seq_problems.setdefault("sequence_missing", []).append(f"event {n} ({kind})")
            self._expected_seq += 1
            return
        if seq < self._expected_seq:
            self._seq_problems.setdefault("sequence_restart", []).append(
                f"event {n} ({kind}) is {seq} after {self._expected_seq - 1}"
            )
        elif seq > self._expected_seq:
            self._seq_problems.setdefault("sequence_gap", []).append(
                f"event {n} ({kind}) is {seq}, expected {self._expected_seq}"
            )
        self._expected_seq = seq + 1

    def _lifecycle(self, kind: str, obj: dict[str, Any], n: int) -> None:
        response = obj.get("response")
        if not isinstance(response, dict):
            self._flag("bad_event", f"event {n}: {kind} without a response object")
            return
        rid = response.get("id")
        if not self._opened:
            # The first lifecycle event names the response, whatever it is (a missing created is its own defect).
            self._opened = True
            self.response_id = rid if isinstance(rid, str) else None
        elif rid != self.response_id:
            self._flag(
                "lifecycle_id_changed",
                f"event {n}: {kind} names {rid!r}, the stream opened as {self.response_id!r}",
                breaks_sdk=True,
            )
        if kind in TERMINALS:
            self.terminal = kind
            self.terminal_response = response

    def _lookup(self, kind: str, obj: dict[str, Any], n: int) -> Item | None:
        index = obj.get("output_index")
        item = self.items.get(index) if isinstance(index, int) else None
        if item is None:
            self._flag(
                "content_before_item",
                f"event {n}: {kind} for output_index {index!r} before its output_item.added",
                breaks_sdk=kind in _SDK_LOOKUP,
            )
            return None
        item_id = obj.get("item_id")
        if item.id is not None and item_id is not None and item_id != item.id:
            self._flag(
                "delta_item_id_mismatch",
                f"event {n}: {kind} names item_id {item_id!r}, the item was added as {item.id!r}",
                item=item,
            )
        if item.done is not None:
            self._flag(
                "event_order", f"event {n}: {kind} for output_index {index} after its output_item.done"
            )
        return item

    def _item_added(self, obj: dict[str, Any], n: int) -> None:
        index, added = obj.get("output_index"), obj.get("item")
        if not isinstance(index, int) or not isinstance(added, dict):
            self._flag("bad_event", f"event {n}: output_item.added without output_index and item")
            return
        if index in self.items:
            self._flag(
                "duplicate_output_index", f"event {n}: output_index {index} added twice", breaks_sdk=True
            )
            return
        if index != len(self.items):
            self._flag(
                "output_order",
                f"event {n}: item {len(self.items) + 1} added with output_index {index}, expected {len(self.items)}",
            )
        self.items[index] = Item(index, len(self.items), added)

    def _item_done(self, obj: dict[str, Any], n: int) -> None:
        index, done = obj.get("output_index"), obj.get("item")
        if not isinstance(index, int) or not isinstance(done, dict):
            self._flag("bad_event", f"event {n}: output_item.done without output_index and item")
            return
        item = self.items.get(index)
        if item is None:
            self._flag("event_order", f"event {n}: output_item.done for output_index {index} never added")
            item = self.items[index] = Item(index, len(self.items), None)
            item.type = str(done.get("type"))
            item.id = done.get("id") if isinstance(done.get("id"), str) else None
        elif item.added is not None and (
            sdk_identity(item.added) != sdk_identity(done) or not sdk_compatible(item.added, done)
        ):
            self._flag(
                "identity_changed",
                f"event {n}: added {sdk_identity(item.added)} {item.added.get('id')!r}, "
                f"done {sdk_identity(done)} {done.get('id')!r}",
                breaks_sdk=True,
                item=item,
            )
        if item.done is not None:
            self._flag("event_order", f"event {n}: second output_item.done for output_index {index}")
        for key, part in item.parts.items():
            if part.added and not part.closed:
                self._flag("event_order", f"event {n}: output_item.done while {_slot(key)} is still open")
            elif part.has_deltas and part.done_text is None:
                self._flag("event_order", f"event {n}: {_slot(key)} streamed deltas but no done event")
        item.done = done

    def _text_event(self, kind: str, obj: dict[str, Any], n: int) -> None:
        slot_kind, index_field, text_field, is_done = _TEXT_EVENTS[kind]
        if slot_kind == "text" and not isinstance(obj.get("logprobs"), list):
            self._logprobs_missing += 1
        item = self._lookup(kind, obj, n)
        if item is None:
            return
        if item.type != KIND_ITEM_TYPE[slot_kind]:
            self._flag(
                "wrong_item_type",
                f"event {n}: {kind} for a {item.type} item",
                breaks_sdk=kind in _SDK_LOOKUP or kind == "response.output_text.done",
            )
            return
        sub = obj.get(index_field) if index_field is not None else None
        key: PartKey = (slot_kind, sub if isinstance(sub, int) else 0 if index_field else None)
        part = item.part(key)
        text = obj.get(text_field)
        if not isinstance(text, str):
            self._flag("bad_event", f"event {n}: {kind} without a string {text_field!r}")
            return
        if index_field is not None and not part.added:
            self._flag(
                "missing_content_part",
                f"event {n}: {kind} for {_slot(key)} of output_index {item.index} before it was added",
                breaks_sdk=slot_kind == "text",
            )
        if is_done:
            if part.done_text is not None:
                self._flag("event_order", f"event {n}: second {kind} for {_slot(key)}")
            part.done_text = text
        else:
            if part.done_text is not None or part.closed:
                self._flag("event_order", f"event {n}: {kind} after {_slot(key)} was done")
            part.has_deltas = True
            part.pieces.append(text)

    def _part_event(self, kind: str, obj: dict[str, Any], n: int, *, summary: bool) -> None:
        item = self._lookup(kind, obj, n)
        if item is None:
            return
        payload = obj.get("part")
        if not isinstance(payload, dict):
            self._flag("bad_event", f"event {n}: {kind} without a part")
            return
        slot_kind = "summary" if summary else _PART_KIND.get(str(payload.get("type")))
        if slot_kind is None:
            return
        if item.type != KIND_ITEM_TYPE[slot_kind]:
            self._flag("wrong_item_type", f"event {n}: {payload.get('type')} part on a {item.type} item")
            return
        sub = obj.get("summary_index" if summary else "content_index")
        key: PartKey = (slot_kind, sub if isinstance(sub, int) else 0)
        part = item.part(key)
        if kind.endswith(".added"):
            if part.added:
                self._flag("event_order", f"event {n}: {_slot(key)} added twice")
            part.added = True
            return
        if not part.added:
            self._flag("event_order", f"event {n}: {kind} for {_slot(key)} that was never added")
        if part.has_deltas and part.done_text is None:
            self._flag("event_order", f"event {n}: {kind} before the done event of {_slot(key)}")
        part.closed = True
        text = payload.get("refusal" if slot_kind == "refusal" else "text")
        part.part_done_text = text if isinstance(text, str) else ""

    # -- the end

    def finish(self) -> list[Defect]:
        for code, where in self._seq_problems.items():
            more = f" (and {len(where) - 1} more)" if len(where) > 1 else ""
            self._flag(code, f"{where[0]}{more}")
        if self._logprobs_missing:
            self._flag(
                "logprobs_missing", f"{self._logprobs_missing} output_text events without a logprobs list"
            )
        if self._done_marker:
            self.notes.append("data: [DONE] marker (not part of the Responses protocol; the SDK stops at it)")
        if self._unknown:
            self.notes.append("event types not checked: " + ", ".join(sorted(self._unknown)))
        if self.terminal is None:
            self._flag("missing_terminal", "the stream ends without a terminal event", breaks_sdk=True)
        elif self.terminal_response is not None:
            self._check_terminal(self.terminal, self.terminal_response)
        items = sorted(self.items.values(), key=lambda it: it.order)
        finals, defects = check_final(items, self.terminal, self.terminal_response)
        self.finals = finals
        self.defects.extend(defects)
        for item in items:
            if item.done is None and self.terminal in ("response.completed", "response.incomplete"):
                self._flag(
                    "item_not_done",
                    f"{item.type} {item.effective_id!r} never got output_item.done",
                    item=item,
                )
            self.defects.extend(compare_views(item, finals.get(item.index)))
        return self.defects

    def _check_terminal(self, terminal: str, response: dict[str, Any]) -> None:
        expected = TERMINALS[terminal]
        status = response.get("status")
        if status != expected:
            self._flag("terminal_status_mismatch", f"{terminal} carries status {status!r}")
        elif expected == "failed" and not isinstance(response.get("error"), dict):
            self._flag("terminal_status_mismatch", "response.failed without response.error")
        elif expected == "incomplete" and not isinstance(response.get("incomplete_details"), dict):
            self._flag("terminal_status_mismatch", "response.incomplete without incomplete_details")
        if expected != "failed" and not isinstance(response.get("usage"), dict):
            self._flag("usage_missing", f"{terminal} carries no usage")
        if not isinstance(response.get("output"), list):
            self._flag("final_output_missing", f"{terminal} carries no output list")


def _slot(key: PartKey) -> str:
    kind, index = key
    return kind if index is None else f"{kind} part {index}"
