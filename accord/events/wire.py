"""Responses stream events (protocol.md A2) and the projection log -> wire.

Every wire event is derived from one response event plus the Snapshot right after it
was folded; the done-payloads (``output_text.done``, ``output_item.done``, the
terminal ``response``) are read from the Snapshot, never rebuilt. ``sequence_number``
is left at -1 here; the Sequencer stamps it at the single egress.
"""

from __future__ import annotations

import bisect
from typing import Any, Literal

import msgspec

from accord.events.items import (
    ContentPart,
    CustomToolCallItem,
    FunctionCallItem,
    OutputItem,
    OutputText,
    ReasoningItem,
    ReasoningText,
    Refusal,
    SummaryText,
)
from accord.events.response import (
    ArgumentsAppended,
    Cancelled,
    Completed,
    Failed,
    Incomplete,
    ItemAdded,
    ItemClosed,
    Opened,
    PartAdded,
    ResponseEvent,
    Snapshot,
    TextAppended,
    fold,
)


class WireEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    sequence_number: int = -1


class ResponseCreated(WireEvent, frozen=True, tag="response.created"):
    response: dict[str, Any]


class ResponseInProgress(WireEvent, frozen=True, tag="response.in_progress"):
    response: dict[str, Any]


class ResponseCompleted(WireEvent, frozen=True, tag="response.completed"):
    response: dict[str, Any]


class ResponseIncomplete(WireEvent, frozen=True, tag="response.incomplete"):
    response: dict[str, Any]


class ResponseFailed(WireEvent, frozen=True, tag="response.failed"):
    response: dict[str, Any]


class ResponseCancelled(WireEvent, frozen=True, tag="response.cancelled"):
    response: dict[str, Any]


class OutputItemAdded(WireEvent, frozen=True, tag="response.output_item.added"):
    output_index: int
    item: OutputItem


class OutputItemDone(WireEvent, frozen=True, tag="response.output_item.done"):
    output_index: int
    item: OutputItem


class ContentPartAdded(WireEvent, frozen=True, tag="response.content_part.added"):
    item_id: str
    output_index: int
    content_index: int
    part: ContentPart


class ContentPartDone(WireEvent, frozen=True, tag="response.content_part.done"):
    item_id: str
    output_index: int
    content_index: int
    part: ContentPart


class OutputTextDelta(WireEvent, frozen=True, tag="response.output_text.delta"):
    item_id: str
    output_index: int
    content_index: int
    delta: str
    logprobs: list[Any]


class OutputTextDone(WireEvent, frozen=True, tag="response.output_text.done"):
    item_id: str
    output_index: int
    content_index: int
    text: str
    logprobs: list[Any]


class RefusalDelta(WireEvent, frozen=True, tag="response.refusal.delta"):
    item_id: str
    output_index: int
    content_index: int
    delta: str


class RefusalDone(WireEvent, frozen=True, tag="response.refusal.done"):
    item_id: str
    output_index: int
    content_index: int
    refusal: str


class ReasoningTextDelta(WireEvent, frozen=True, tag="response.reasoning_text.delta"):
    item_id: str
    output_index: int
    content_index: int
    delta: str


class ReasoningTextDone(WireEvent, frozen=True, tag="response.reasoning_text.done"):
    item_id: str
    output_index: int
    content_index: int
    text: str


class ReasoningSummaryPartAdded(WireEvent, frozen=True, tag="response.reasoning_summary_part.added"):
    item_id: str
    output_index: int
    summary_index: int
    part: SummaryText


class ReasoningSummaryTextDelta(WireEvent, frozen=True, tag="response.reasoning_summary_text.delta"):
    item_id: str
    output_index: int
    summary_index: int
    delta: str


class ReasoningSummaryTextDone(WireEvent, frozen=True, tag="response.reasoning_summary_text.done"):
    item_id: str
    output_index: int
    summary_index: int
    text: str


class ReasoningSummaryPartDone(
    WireEvent, frozen=True, omit_defaults=True, tag="response.reasoning_summary_part.done"
):
    """``status`` is left out when the part completed, ``incomplete`` when it was cut off (as the SDK types it)."""

    item_id: str
    output_index: int
    summary_index: int
    part: SummaryText
    status: Literal["incomplete"] | None = None


class FunctionCallArgumentsDelta(WireEvent, frozen=True, tag="response.function_call_arguments.delta"):
    item_id: str
    output_index: int
    delta: str


class FunctionCallArgumentsDone(WireEvent, frozen=True, tag="response.function_call_arguments.done"):
    item_id: str
    output_index: int
    arguments: str


class CustomToolCallInputDelta(WireEvent, frozen=True, tag="response.custom_tool_call_input.delta"):
    item_id: str
    output_index: int
    delta: str


class CustomToolCallInputDone(WireEvent, frozen=True, tag="response.custom_tool_call_input.done"):
    item_id: str
    output_index: int
    input: str


class Error(WireEvent, frozen=True, tag="error"):
    """Flat, as the SDK types it: a nested ``error`` object would make the SDK raise (A1)."""

    code: str | None
    message: str
    param: str | None = None


AnyWireEvent = (
    ResponseCreated
    | ResponseInProgress
    | ResponseCompleted
    | ResponseIncomplete
    | ResponseFailed
    | ResponseCancelled
    | OutputItemAdded
    | OutputItemDone
    | ContentPartAdded
    | ContentPartDone
    | OutputTextDelta
    | OutputTextDone
    | RefusalDelta
    | RefusalDone
    | ReasoningTextDelta
    | ReasoningTextDone
    | ReasoningSummaryPartAdded
    | ReasoningSummaryTextDelta
    | ReasoningSummaryTextDone
    | ReasoningSummaryPartDone
    | FunctionCallArgumentsDelta
    | FunctionCallArgumentsDone
    | CustomToolCallInputDelta
    | CustomToolCallInputDone
    | Error
)

TERMINAL_TYPES = (ResponseCompleted, ResponseIncomplete, ResponseFailed, ResponseCancelled)


def _empty_part(kind: str) -> ContentPart:
    if kind == "output_text":
        return OutputText(text="", annotations=[], logprobs=[])
    if kind == "refusal":
        return Refusal(refusal="")
    return ReasoningText(text="")


def _closing(snapshot: Snapshot, index: int) -> list[WireEvent]:
    """The done-events of one item, in OpenAI's order, read from the Snapshot."""
    item = snapshot.item(index)
    events: list[WireEvent] = []
    if isinstance(item, FunctionCallItem):
        events.append(
            FunctionCallArgumentsDone(item_id=item.id, output_index=index, arguments=item.arguments)
        )
    elif isinstance(item, CustomToolCallItem):
        events.append(CustomToolCallInputDone(item_id=item.id, output_index=index, input=item.input))
    else:
        for ci, part in enumerate(item.content):
            if isinstance(part, OutputText):
                events.append(
                    OutputTextDone(
                        item_id=item.id, output_index=index, content_index=ci, text=part.text, logprobs=[]
                    )
                )
            elif isinstance(part, Refusal):
                events.append(
                    RefusalDone(item_id=item.id, output_index=index, content_index=ci, refusal=part.refusal)
                )
            else:
                events.append(
                    ReasoningTextDone(item_id=item.id, output_index=index, content_index=ci, text=part.text)
                )
            events.append(ContentPartDone(item_id=item.id, output_index=index, content_index=ci, part=part))
            if isinstance(item, ReasoningItem) and ci < len(item.summary):
                events.extend(_summary_closing(item, index, ci))
    events.append(OutputItemDone(output_index=index, item=item))
    return events


def _summary_closing(item: ReasoningItem, index: int, si: int) -> list[WireEvent]:
    """The summary view of reasoning part ``si``: the same characters, closed the same way."""
    summary = item.summary[si]
    return [
        ReasoningSummaryTextDone(item_id=item.id, output_index=index, summary_index=si, text=summary.text),
        ReasoningSummaryPartDone(
            item_id=item.id,
            output_index=index,
            summary_index=si,
            part=summary,
            status="incomplete" if item.status == "incomplete" else None,
        ),
    ]


def project(event: ResponseEvent, snapshot: Snapshot, open_before: list[int]) -> list[WireEvent]:
    """The wire events for ``event``, given the Snapshot after folding it.

    ``open_before`` lists the items that were open before a terminal event closed them;
    their done-events go out ahead of the terminal one.
    """
    match event:
        case TextAppended():
            state = snapshot.items[event.output_index]
            kind = state.parts[event.content_index].kind
            i, ci, d = event.output_index, event.content_index, event.delta
            if kind == "output_text":
                return [
                    OutputTextDelta(
                        item_id=state.item_id, output_index=i, content_index=ci, delta=d, logprobs=[]
                    )
                ]
            if kind == "refusal":
                return [RefusalDelta(item_id=state.item_id, output_index=i, content_index=ci, delta=d)]
            reasoning: list[WireEvent] = [
                ReasoningTextDelta(item_id=state.item_id, output_index=i, content_index=ci, delta=d)
            ]
            if state.summarised:
                reasoning.append(
                    ReasoningSummaryTextDelta(
                        item_id=state.item_id, output_index=i, summary_index=ci, delta=d
                    )
                )
            return reasoning
        case Opened():
            body = snapshot.body()
            return [ResponseCreated(response=body), ResponseInProgress(response=body)]
        case ItemAdded():
            return [OutputItemAdded(output_index=event.output_index, item=event.item)]
        case PartAdded():
            state = snapshot.items[event.output_index]
            added: list[WireEvent] = [
                ContentPartAdded(
                    item_id=state.item_id,
                    output_index=event.output_index,
                    content_index=event.content_index,
                    part=_empty_part(event.part),
                )
            ]
            if state.summarised:
                added.append(
                    ReasoningSummaryPartAdded(
                        item_id=state.item_id,
                        output_index=event.output_index,
                        summary_index=event.content_index,
                        part=SummaryText(text=""),
                    )
                )
            return added
        case ArgumentsAppended():
            state = snapshot.items[event.output_index]
            if isinstance(state.first, FunctionCallItem):
                return [
                    FunctionCallArgumentsDelta(
                        item_id=state.item_id, output_index=event.output_index, delta=event.delta
                    )
                ]
            return [
                CustomToolCallInputDelta(
                    item_id=state.item_id, output_index=event.output_index, delta=event.delta
                )
            ]
        case ItemClosed():
            return _closing(snapshot, event.output_index)
        case Completed() | Incomplete() | Failed() | Cancelled():
            events = [e for i in open_before for e in _closing(snapshot, i)]
            body = snapshot.body()
            if isinstance(event, Completed):
                events.append(ResponseCompleted(response=body))
            elif isinstance(event, Incomplete):
                events.append(ResponseIncomplete(response=body))
            elif isinstance(event, Failed):
                events.append(Error(code=event.code, message=event.message))
                events.append(ResponseFailed(response=body))
            else:
                events.append(ResponseCancelled(response=body))
            return events
        case _:
            raise TypeError(f"cannot project {event!r}")


_TERMINAL_EVENTS = frozenset({Completed, Incomplete, Failed, Cancelled})


class EventLog:
    """One response's log: append folds the event and returns its projection."""

    def __init__(self) -> None:
        self.events: list[ResponseEvent] = []
        self.snapshot = Snapshot()
        #: After each event, how many wire events the log has projected in all; a
        #: keepalive placed after ``n`` of them finds the fold it belongs to here.
        self.projected: list[int] = []

    @property
    def terminated(self) -> bool:
        return self.snapshot.terminal is not None

    def append(self, event: ResponseEvent) -> list[WireEvent]:
        open_before = self.snapshot.open_indices() if type(event) in _TERMINAL_EVENTS else []
        self.snapshot.apply(event)
        self.events.append(event)
        wire = project(event, self.snapshot, open_before)
        self.projected.append((self.projected[-1] if self.projected else 0) + len(wire))
        return wire

    def keepalive(self, projected_sent: int) -> ResponseInProgress:
        """The keepalive after the first ``projected_sent`` projected wire events (SPEC W8).

        It carries the response as folded up to the last event whose projection the
        client has whole, with status ``in_progress``: a client that replaces its state
        with this object (openai-node does) must be able to apply the next delta to it.
        The producer may already have folded events whose wire events are still queued,
        so the live Snapshot is used only when it is exactly that far; otherwise the
        prefix is folded again (rare: a keepalive racing a burst).
        """
        done = bisect.bisect_right(self.projected, projected_sent)
        if done == 0:
            raise RuntimeError("keepalive before the response opened")
        snapshot = self.snapshot if done == len(self.events) else fold(self.events[:done])
        body = snapshot.body()
        body["status"] = "in_progress"
        return ResponseInProgress(response=body)
