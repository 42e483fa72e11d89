"""The events of one response, the Snapshot they fold into, and ``fold``.

Theory of operation: a response is an append-only log of these events. The Snapshot
is the left fold of the log; every client-visible byte (the SSE stream, the
``response.completed`` body, the non-streamed JSON, the stored response) is read from
the log or the Snapshot, so stream and final response cannot disagree.

The fold keeps text as lists of pieces and joins them only when an item is
materialised (at its ``done`` and at the end), so folding costs O(total text).
Applying an event the state does not allow raises :class:`FoldError`: a bug upstream,
not a case to handle.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from accord.errors import ProtocolViolation
from accord.events.items import (
    ContentPart,
    CustomToolCallItem,
    FunctionCallItem,
    ItemStatus,
    MessageItem,
    OutputItem,
    OutputText,
    ReasoningItem,
    ReasoningText,
    Refusal,
    SummaryText,
    Usage,
)

PartKind = Literal["output_text", "refusal", "reasoning_text"]
Status = Literal["in_progress", "completed", "incomplete", "failed", "cancelled", "queued"]


class FoldError(ProtocolViolation):
    """An event that the Snapshot's state does not allow."""


class ResponseEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of the closed union of response events."""


class Opened(ResponseEvent, frozen=True, tag="opened"):
    response_id: str
    created_at: int
    model: str
    #: Request fields the Response object echoes (instructions, tools, metadata, ...).
    echo: dict[str, Any] = {}
    #: ``reasoning.summary`` was set: reasoning items also carry their text as
    #: ``summary_text`` parts, a second view of the same characters (one per part).
    reasoning_summary: bool = False
    #: A background response accepted but not started: the fold's status is ``queued``
    #: (SPEC S4). The run itself opens with ``queued=False``; nothing else may follow a
    #: queued opening.
    queued: bool = False


class ItemAdded(ResponseEvent, frozen=True, tag="item_added"):
    output_index: int
    #: The item as first announced: empty content, empty arguments, status in_progress.
    item: OutputItem


class PartAdded(ResponseEvent, frozen=True, tag="part_added"):
    output_index: int
    content_index: int
    part: PartKind


class TextAppended(ResponseEvent, frozen=True, tag="text_appended"):
    output_index: int
    content_index: int
    delta: str


class ArgumentsAppended(ResponseEvent, frozen=True, tag="arguments_appended"):
    """Function-call arguments or custom-tool input grew by ``delta``."""

    output_index: int
    delta: str


class ItemClosed(ResponseEvent, frozen=True, tag="item_closed"):
    output_index: int
    status: ItemStatus
    encrypted_content: str | None = None


class Completed(ResponseEvent, frozen=True, tag="completed"):
    usage: Usage
    completed_at: int
    #: The stop string the engine cut the text at, if one ended it.
    stop_sequence: str | None = None


class Incomplete(ResponseEvent, frozen=True, tag="incomplete"):
    reason: str
    usage: Usage


class Failed(ResponseEvent, frozen=True, tag="failed"):
    code: str
    message: str
    usage: Usage | None = None


class Cancelled(ResponseEvent, frozen=True, tag="cancelled"):
    usage: Usage | None = None


Terminal = Completed | Incomplete | Failed | Cancelled
AnyResponseEvent = (
    Opened
    | ItemAdded
    | PartAdded
    | TextAppended
    | ArgumentsAppended
    | ItemClosed
    | Completed
    | Incomplete
    | Failed
    | Cancelled
)


class _Part:
    __slots__ = ("kind", "pieces")

    def __init__(self, kind: PartKind) -> None:
        self.kind = kind
        self.pieces: list[str] = []

    def text(self) -> str:
        if len(self.pieces) > 1:
            self.pieces = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""

    def materialise(self) -> ContentPart:
        if self.kind == "output_text":
            return OutputText(text=self.text(), annotations=[], logprobs=[])
        if self.kind == "refusal":
            return Refusal(refusal=self.text())
        return ReasoningText(text=self.text())


class _Item:
    """Fold state of one output item; materialised into its wire struct on demand."""

    __slots__ = ("args", "encrypted", "first", "parts", "status", "summarised")

    def __init__(self, first: OutputItem, *, summarised: bool = False) -> None:
        self.first = first
        #: A reasoning item whose parts are also its summary (``Opened.reasoning_summary``).
        self.summarised = summarised and isinstance(first, ReasoningItem)
        self.status: ItemStatus = "in_progress"
        self.parts: list[_Part] = []
        self.args: list[str] = []
        self.encrypted: str | None = None

    @property
    def item_id(self) -> str:
        return self.first.id

    def arguments(self) -> str:
        if len(self.args) > 1:
            self.args = ["".join(self.args)]
        return self.args[0] if self.args else ""

    def materialise(self) -> OutputItem:
        first = self.first
        if isinstance(first, MessageItem):
            content = [p.materialise() for p in self.parts]
            return msgspec.structs.replace(first, status=self.status, content=content)
        if isinstance(first, ReasoningItem):
            reasoning = [p.materialise() for p in self.parts]
            summary = [SummaryText(text=p.text()) for p in self.parts] if self.summarised else first.summary
            return msgspec.structs.replace(
                first,
                status=self.status,
                summary=summary,
                content=reasoning,
                encrypted_content=self.encrypted,
            )
        if isinstance(first, FunctionCallItem):
            return msgspec.structs.replace(first, status=self.status, arguments=self.arguments())
        return msgspec.structs.replace(first, status=self.status, input=self.arguments())


_PARTS_OF: dict[type[Any], tuple[PartKind, ...]] = {
    MessageItem: ("output_text", "refusal"),
    ReasoningItem: ("reasoning_text",),
}


class Snapshot:
    """The fold of a response's events: everything the final Response object says."""

    def __init__(self) -> None:
        self.response_id = ""
        self.created_at = 0
        self.model = ""
        self.echo: dict[str, Any] = {}
        self.reasoning_summary = False
        self.status: Status = "in_progress"
        self.items: list[_Item] = []
        self.usage: Usage | None = None
        self.error: dict[str, Any] | None = None
        #: The stop string that ended a completed response's text, if one did.
        self.stop_sequence: str | None = None
        self.incomplete_reason: str | None = None
        self.completed_at: int | None = None
        self.terminal: Terminal | None = None
        self._opened = False

    # -- folding ---------------------------------------------------------------------
    def apply(self, event: ResponseEvent) -> None:
        if self.terminal is not None:
            raise FoldError(f"{type(event).__name__} after the terminal event")
        if not self._opened and not isinstance(event, Opened):
            raise FoldError(f"{type(event).__name__} before Opened")
        match event:
            case TextAppended():
                item = self._open_item(event.output_index)
                if not 0 <= event.content_index < len(item.parts):
                    raise FoldError(f"text for missing part {event.content_index}")
                item.parts[event.content_index].pieces.append(event.delta)
            case Opened():
                if self._opened:
                    raise FoldError("Opened twice")
                self._opened = True
                self.response_id, self.created_at, self.model = (
                    event.response_id,
                    event.created_at,
                    event.model,
                )
                self.echo = dict(event.echo)
                self.reasoning_summary = event.reasoning_summary
                if event.queued:
                    self.status = "queued"
            case _ if self.status == "queued":
                raise FoldError(f"{type(event).__name__} on a queued response")
            case ItemAdded():
                if event.output_index != len(self.items):
                    raise FoldError(f"item added at {event.output_index}, expected {len(self.items)}")
                self.items.append(_Item(event.item, summarised=self.reasoning_summary))
            case PartAdded():
                item = self._open_item(event.output_index)
                if event.part not in _PARTS_OF.get(type(item.first), ()):
                    raise FoldError(f"{event.part} part on a {type(item.first).__name__}")
                if event.content_index != len(item.parts):
                    raise FoldError(f"part added at {event.content_index}, expected {len(item.parts)}")
                item.parts.append(_Part(event.part))
            case ArgumentsAppended():
                item = self._open_item(event.output_index)
                if not isinstance(item.first, (FunctionCallItem, CustomToolCallItem)):
                    raise FoldError("arguments on an item that is not a call")
                item.args.append(event.delta)
            case ItemClosed():
                item = self._open_item(event.output_index)
                item.status = event.status
                item.encrypted = event.encrypted_content
            case Completed():
                self._close_open("completed")
                self.status, self.usage, self.completed_at = "completed", event.usage, event.completed_at
                self.stop_sequence = event.stop_sequence
                self.terminal = event
            case Incomplete():
                self._close_open("incomplete")
                self.status, self.usage, self.incomplete_reason = "incomplete", event.usage, event.reason
                self.terminal = event
            case Failed():
                self._close_open("incomplete")
                self.status, self.usage = "failed", event.usage
                self.error = {"code": event.code, "message": event.message}
                self.terminal = event
            case Cancelled():
                self._close_open("incomplete")
                self.status, self.usage = "cancelled", event.usage
                self.terminal = event
            case _:
                raise FoldError(f"unknown event {event!r}")

    def _open_item(self, index: int) -> _Item:
        if not 0 <= index < len(self.items):
            raise FoldError(f"no item at output_index {index}")
        item = self.items[index]
        if item.status != "in_progress":
            raise FoldError(f"item {index} is already closed")
        return item

    def _close_open(self, status: ItemStatus) -> None:
        for item in self.items:
            if item.status == "in_progress":
                item.status = status

    # -- reading ---------------------------------------------------------------------
    def open_indices(self) -> list[int]:
        return [i for i, item in enumerate(self.items) if item.status == "in_progress"]

    def item(self, index: int) -> OutputItem:
        return self.items[index].materialise()

    def part_text(self, index: int, content_index: int) -> str:
        return self.items[index].parts[content_index].text()

    def part(self, index: int, content_index: int) -> ContentPart:
        return self.items[index].parts[content_index].materialise()

    def arguments(self, index: int) -> str:
        return self.items[index].arguments()

    def output(self) -> list[OutputItem]:
        return [item.materialise() for item in self.items]

    def body(self, *, with_output: bool = True) -> dict[str, Any]:
        """The Response object (docs/spec.md A3) as of this point of the fold."""
        body: dict[str, Any] = {
            "id": self.response_id,
            "object": "response",
            "created_at": self.created_at,
            # Required (nullable) by the Open Responses schema, in every snapshot.
            "completed_at": self.completed_at,
            "status": self.status,
            "model": self.model,
            "output": self.output() if with_output else [],
            "error": self.error,
            "incomplete_details": (
                {"reason": self.incomplete_reason} if self.incomplete_reason is not None else None
            ),
            "usage": self.usage,
        }
        for key, value in self.echo.items():
            body.setdefault(key, value)
        return body


def fold(events: list[ResponseEvent]) -> Snapshot:
    """The Snapshot of a whole log."""
    snapshot = Snapshot()
    for event in events:
        snapshot.apply(event)
    return snapshot
