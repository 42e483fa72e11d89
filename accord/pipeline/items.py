"""ItemTracker: parsed segments -> response events, with ids injected (SPEC W1, W2).

Strategy: at most one text item (a message or a reasoning item) is open at a time;
a segment of another kind closes it and opens the next. A whole call (:class:`ToolCall`)
is one ``ItemAdded`` with empty arguments, one ``ArgumentsAppended`` with the complete
arguments and an ``ItemClosed`` (SPEC P4). A streamed call is its ``ItemAdded`` at
:class:`CallOpened`, an ``ArgumentsAppended`` per :class:`CallArguments`, and ``ItemClosed``
``completed`` at :class:`CallClosed` or ``incomplete`` at :class:`CallAbandoned` (never
completed; the text the parser reads on with lands in a message as usual). A call that
cannot stream its item is collected and reported whole when it ends: a custom tool (its
``input`` is the string decoded from the arguments, SPEC P10), and any call after the first
completed one when ``parallel_tool_calls`` is false (released as text, SPEC P9). Ids and the
clock come from outside, so the tracker is deterministic and runs without an event loop.

Whitespace-only text between items (``</think>\\n\\n<tool_call>``) does not open a
message of its own: it is held and joins the next message's text, and is dropped when
a call, a reasoning item or the end follows it (counted in ``dropped_whitespace``).
Every other character lands in exactly one item.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from accord.errors import ProtocolViolation
from accord.events.generation import EngineFailed, Finished
from accord.events.items import (
    CustomToolCallItem,
    FunctionCallItem,
    ItemStatus,
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
from accord.pipeline.segments import (
    CallAbandoned,
    CallArguments,
    CallClosed,
    CallOpened,
    Content,
    ParsedSegment,
    Reasoning,
    ToolCall,
    ToolSpec,
)

#: Failure kinds whose message is the engine's own words, shown to the client (SPEC W6).
_MESSAGE_SHOWN = frozenset({"engine_error", "context_length_exceeded", "upstream_error"})


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
        self._open: int | None = None
        self._open_kind: str = ""
        self._open_phase: str | None = None
        self._reasoning_text: list[str] = []
        self._pending_ws = ""
        self._calls = 0
        self._call_ids: set[str] = set()
        # The streamed call now open: its item's index, or (when it cannot stream) the
        # opening and its arguments so far.
        self._streaming: int | None = None
        self._collected: CallOpened | None = None
        self._collected_args: list[str] = []
        self.dropped_whitespace = 0

    def feed(self, segment: ParsedSegment | End) -> list[ResponseEvent]:
        match segment:
            case Content():
                return self._content(segment)
            case Reasoning():
                return self._reasoning(segment.text)
            case ToolCall():
                return self._call(segment)
            case CallArguments():
                if self._streaming is not None:
                    return [ArgumentsAppended(output_index=self._streaming, delta=segment.delta)]
                if self._collected is None:
                    raise ProtocolViolation("call arguments while no call is open")
                self._collected_args.append(segment.delta)
                return []
            case CallOpened():
                return self._call_opened(segment)
            case CallClosed():
                return self._call_ended(completed=True)
            case CallAbandoned():
                return self._call_ended(completed=False)
            case End():
                return self._end(segment)
        raise TypeError(f"not a segment: {segment!r}")

    # -- text items ------------------------------------------------------------------
    def _content(self, seg: Content) -> list[ResponseEvent]:
        if not seg.text:
            return []
        if self._open_kind == "message" and self._open_phase == seg.phase and self._open is not None:
            return [TextAppended(output_index=self._open, content_index=0, delta=seg.text)]
        if not seg.text.strip():
            self._pending_ws += seg.text
            return []
        events = self._close()
        index = self._add_index()
        item = MessageItem(
            id=self._new_id("msg"), role="assistant", status="in_progress", content=[], phase=seg.phase
        )
        self._open, self._open_kind, self._open_phase = index, "message", seg.phase
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
        if self._open_kind == "reasoning" and self._open is not None:
            self._reasoning_text.append(text)
            return [TextAppended(output_index=self._open, content_index=0, delta=text)]
        events = self._close()
        self._drop_pending()
        index = self._add_index()
        item = ReasoningItem(id=self._new_id("rs"), summary=[], content=[], status="in_progress")
        self._open, self._open_kind, self._reasoning_text = index, "reasoning", [text]
        events += [
            ItemAdded(output_index=index, item=item),
            PartAdded(output_index=index, content_index=0, part="reasoning_text"),
            TextAppended(output_index=index, content_index=0, delta=text),
        ]
        return events

    def _close(self) -> list[ResponseEvent]:
        if self._open is None:
            return []
        sealed = None
        if self._open_kind == "reasoning" and self._seal is not None:
            sealed = self._seal("".join(self._reasoning_text))
        event = ItemClosed(output_index=self._open, status="completed", encrypted_content=sealed)
        self._open, self._open_kind, self._open_phase = None, "", None
        return [event]

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
        return self._whole(seg.name, seg.call_id, seg.arguments, "completed")

    def _released(self) -> bool:
        return not self._parallel and self._calls >= 1

    def _call_opened(self, seg: CallOpened) -> list[ResponseEvent]:
        if self._streaming is not None or self._collected is not None:
            raise ProtocolViolation("a call opened while another is open")
        spec = self._tools.get(seg.name)
        if self._released() or (spec is not None and spec.kind == "custom"):
            self._collected, self._collected_args = seg, []
            return []
        events = self._close()
        self._drop_pending()
        index, item = self._call_item(seg.name, seg.call_id)
        self._streaming = index
        events.append(ItemAdded(output_index=index, item=item))
        return events

    def _call_ended(self, *, completed: bool) -> list[ResponseEvent]:
        if self._streaming is not None:
            index, self._streaming = self._streaming, None
            if completed:
                self._calls += 1
            return [ItemClosed(output_index=index, status="completed" if completed else "incomplete")]
        opened = self._collected
        if opened is None:
            raise ProtocolViolation("a call ended while no call is open")
        arguments = "".join(self._collected_args)
        self._collected, self._collected_args = None, []
        if completed:
            return self._call(ToolCall(name=opened.name, arguments=arguments, call_id=opened.call_id))
        if self._released():
            # The start of what a complete released call reads as; nothing the model wrote is lost.
            head = json.dumps({"name": opened.name}, ensure_ascii=False)[:-1]
            return self._content(Content(text=f'{head}, "arguments": {arguments}'))
        return self._whole(opened.name, opened.call_id, arguments, "incomplete")

    def _whole(
        self, name: str, call_id: str | None, arguments: str, status: ItemStatus
    ) -> list[ResponseEvent]:
        """A call reported in one go: added, its arguments (or custom input), closed."""
        events = self._close()
        self._drop_pending()
        if status == "completed":
            self._calls += 1
        index, item = self._call_item(name, call_id)
        payload = _custom_input(arguments) if isinstance(item, CustomToolCallItem) else arguments
        events.append(ItemAdded(output_index=index, item=item))
        if payload:
            events.append(ArgumentsAppended(output_index=index, delta=payload))
        events.append(ItemClosed(output_index=index, status=status))
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
        # The parser ends every call it opened before the end; one still open never completed.
        ended = self._call_ended(completed=False) if self._streaming is not None or self._collected else []
        self._drop_pending()
        if isinstance(outcome, Finished):
            usage = Usage.of(
                input_tokens=outcome.prompt_tokens,
                cached_tokens=outcome.cached_tokens,
                output_tokens=end.output_tokens,
                reasoning_tokens=end.reasoning_tokens,
            )
            if outcome.reason == "length":
                return [*ended, Incomplete(reason="max_output_tokens", usage=usage)]
            return [
                *ended,
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
        return [*ended, Failed(code=outcome.failure, message=message, usage=usage)]


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
