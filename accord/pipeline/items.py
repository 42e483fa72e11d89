"""ItemTracker: parsed segments -> response events, with ids injected (SPEC W1, W2).

Strategy: at most one text item (a message or a reasoning item) is open at a time, held
as one value of the sum type :data:`OpenItem`; a segment of another kind closes it and opens
the next. A call (:class:`ToolCall`, always complete: the parsers report no call before its
arguments are valid JSON, SPEC P4) is one ``ItemAdded`` with empty arguments, one
``ArgumentsAppended`` with the complete arguments and an ``ItemClosed`` ``completed``. A
custom tool's ``input`` is the string decoded from the arguments (SPEC P10); any call after
the first when ``parallel_tool_calls`` is false is released as text (SPEC P9). So no
response holds a call item that is not completed. Ids and the clock come from outside, so
the tracker is deterministic and runs without an event loop.

Whitespace-only text between items (``</think>\\n\\n<tool_call>``) does not open a
message of its own: it is held and joins the next message's text, and is dropped when
a call, a reasoning item or the end follows it (counted in ``dropped_whitespace``).
Every other character lands in exactly one item.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from accord.errors import ProtocolViolation
from accord.events.generation import EngineFailed, Finished
from accord.events.items import (
    CustomToolCallItem,
    FunctionCallItem,
    MessageItem,
    ReasoningItem,
    Usage,
)
from accord.events.response import (
    ArgumentsAppended,
    Completed,
    Failed,
    Incomplete,
    ItemAdded,
    ItemClosed,
    PartAdded,
    ResponseEvent,
    TextAppended,
)
from accord.pipeline.parse import End
from accord.pipeline.segments import Content, ParsedSegment, Reasoning, ToolCall, ToolSpec

#: Failure kinds whose message is the engine's own words, shown to the client (SPEC W6).
_MESSAGE_SHOWN = frozenset({"engine_error", "context_length_exceeded", "upstream_error"})


@dataclass(frozen=True, slots=True)
class OpenMessage:
    """The message item being written: its output index and phase."""

    index: int
    phase: Literal["commentary", "final_answer"] | None


@dataclass(frozen=True, slots=True)
class OpenReasoning:
    """The reasoning item being written: its output index and its text so far (for sealing)."""

    index: int
    text: list[str] = field(default_factory=list)


#: The text item now open, if any.
OpenItem = OpenMessage | OpenReasoning | None


class ItemTracker:
    def __init__(
        self,
        *,
        new_id: Callable[[str], str],
        now: Callable[[], int],
        tools: Sequence[ToolSpec] = (),
        parallel_tool_calls: bool = True,
        seal: Callable[[str], str] | None = None,
    ) -> None:
        self._new_id = new_id
        self._now = now
        self._tools = {t.name: t for t in tools}
        self._parallel = parallel_tool_calls
        self._seal = seal
        self._next_index = 0
        self._open: OpenItem = None
        self._pending_ws = ""
        self._calls = 0
        self._call_ids: set[str] = set()
        self.dropped_whitespace = 0

    def feed(self, segment: ParsedSegment | End) -> list[ResponseEvent]:
        match segment:
            case Content():
                return self._content(segment)
            case Reasoning():
                return self._reasoning(segment.text)
            case ToolCall():
                return self._call(segment)
            case End():
                return self._end(segment)
        raise ProtocolViolation(f"not a segment: {segment!r}")

    # -- text items ------------------------------------------------------------------
    def _content(self, seg: Content) -> list[ResponseEvent]:
        if not seg.text:
            return []
        open_ = self._open
        if isinstance(open_, OpenMessage) and open_.phase == seg.phase:
            return [TextAppended(output_index=open_.index, content_index=0, delta=seg.text)]
        if not seg.text.strip():
            self._pending_ws += seg.text
            return []
        events = self._close()
        index = self._add_index()
        item = MessageItem(
            id=self._new_id("msg"), role="assistant", status="in_progress", content=[], phase=seg.phase
        )
        self._open = OpenMessage(index, seg.phase)
        text, self._pending_ws = self._pending_ws + seg.text, ""
        events += [
            ItemAdded(output_index=index, item=item),
            PartAdded(output_index=index, content_index=0, part="output_text"),
            TextAppended(output_index=index, content_index=0, delta=text),
        ]
        return events

    def _reasoning(self, text: str) -> list[ResponseEvent]:
        if not text:
            return []
        open_ = self._open
        if isinstance(open_, OpenReasoning):
            open_.text.append(text)
            return [TextAppended(output_index=open_.index, content_index=0, delta=text)]
        events = self._close()
        self._drop_pending()
        index = self._add_index()
        item = ReasoningItem(id=self._new_id("rs"), summary=[], content=[], status="in_progress")
        self._open = OpenReasoning(index, [text])
        events += [
            ItemAdded(output_index=index, item=item),
            PartAdded(output_index=index, content_index=0, part="reasoning_text"),
            TextAppended(output_index=index, content_index=0, delta=text),
        ]
        return events

    def _close(self) -> list[ResponseEvent]:
        open_ = self._open
        if open_ is None:
            return []
        sealed = None
        if isinstance(open_, OpenReasoning) and self._seal is not None:
            sealed = self._seal("".join(open_.text))
        self._open = None
        return [ItemClosed(output_index=open_.index, status="completed", encrypted_content=sealed)]

    def _drop_pending(self) -> None:
        self.dropped_whitespace += len(self._pending_ws)
        self._pending_ws = ""

    def _add_index(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index

    # -- calls -----------------------------------------------------------------------
    def _call(self, seg: ToolCall) -> list[ResponseEvent]:
        if self._released():
            # SPEC P9: with parallel_tool_calls false only the first call is reported.
            raw = json.dumps({"name": seg.name, "arguments": json.loads(seg.arguments)}, ensure_ascii=False)
            return self._content(Content(text=raw))
        return self._whole(seg.name, seg.call_id, seg.arguments)

    def _released(self) -> bool:
        return not self._parallel and self._calls >= 1

    def _whole(self, name: str, call_id: str | None, arguments: str) -> list[ResponseEvent]:
        """A call reported in one go: added, its arguments (or custom input), closed."""
        events = self._close()
        self._drop_pending()
        self._calls += 1
        index, item = self._call_item(name, call_id)
        payload = _custom_input(arguments) if isinstance(item, CustomToolCallItem) else arguments
        events.append(ItemAdded(output_index=index, item=item))
        if payload:
            events.append(ArgumentsAppended(output_index=index, delta=payload))
        events.append(ItemClosed(output_index=index, status="completed"))
        return events

    def _call_item(
        self, name: str, model_call_id: str | None
    ) -> tuple[int, FunctionCallItem | CustomToolCallItem]:
        """A new call item at the next index, with a call_id unique in the response."""
        spec = self._tools.get(name)
        if model_call_id and model_call_id not in self._call_ids:
            call_id = model_call_id
        else:
            call_id = self._new_id("call")
        self._call_ids.add(call_id)
        index = self._add_index()
        namespace = spec.namespace if spec else None
        bare = spec.bare_name if spec else name
        if spec is not None and spec.kind == "custom":
            return index, CustomToolCallItem(
                id=self._new_id("ctc"),
                call_id=call_id,
                name=bare,
                input="",
                status="in_progress",
                namespace=namespace,
            )
        return index, FunctionCallItem(
            id=self._new_id("fc"),
            call_id=call_id,
            name=bare,
            arguments="",
            status="in_progress",
            namespace=namespace,
        )

    # -- the end ---------------------------------------------------------------------
    def _end(self, end: End) -> list[ResponseEvent]:
        outcome = end.outcome
        self._drop_pending()
        if isinstance(outcome, Finished):
            usage = Usage.of(
                input_tokens=outcome.prompt_tokens,
                cached_tokens=outcome.cached_tokens,
                output_tokens=end.output_tokens,
                reasoning_tokens=end.reasoning_tokens,
            )
            if outcome.reason == "length":
                return [Incomplete(reason="max_output_tokens", usage=usage)]
            return [
                *self._close(),
                Completed(usage=usage, completed_at=self._now(), stop_sequence=outcome.stop_sequence),
            ]
        assert isinstance(outcome, EngineFailed)
        usage = Usage.of(
            input_tokens=outcome.prompt_tokens,
            cached_tokens=0,
            output_tokens=end.output_tokens,
            reasoning_tokens=end.reasoning_tokens,
        )
        message = outcome.message if outcome.failure in _MESSAGE_SHOWN else "internal error"
        return [Failed(code=outcome.failure, message=message, usage=usage)]


def _custom_input(arguments: str) -> str:
    """A custom tool is offered as a function with one string ``input`` (SPEC P10)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, dict):
        inner = value.get("input")
        if isinstance(inner, str):
            return inner
        if len(value) == 1:
            only = next(iter(value.values()))
            if isinstance(only, str):
                return only
    return arguments
