"""What a stored response is, and how a finished run becomes one.

The record is the response's event log (event sourcing: the log is the record, the
Snapshot its fold) plus the sequence numbers its keepalives took, the request as decoded,
and the conversation items a continuation needs: the request's own input items and the
output items, one row each so ``item_reference`` and ``input_items`` can find them by id.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from accord.adapters.requests import ResponsesRequest
from accord.errors import ProtocolViolation, StoreError
from accord.events.response import AnyResponseEvent, Opened, ResponseEvent, Snapshot, fold

ItemRole = Literal["input", "output"]

_encode = msgspec.json.Encoder().encode
_events_decoder = msgspec.json.Decoder(list[AnyResponseEvent])
_request_decoder = msgspec.json.Decoder(ResponsesRequest)
_item_decoder = msgspec.json.Decoder(dict[str, Any])
_seqs_decoder = msgspec.json.Decoder(list[int])

#: Statuses after which nothing more happens to a response.
FINAL_STATUSES = frozenset({"completed", "incomplete", "failed", "cancelled"})


class StoredItem(msgspec.Struct, frozen=True, kw_only=True):
    position: int
    role: ItemRole
    #: The item's own id, or one minted for it (input items may come without).
    item_id: str
    #: The item as JSON, exactly as it entered (input) or left (output) the response.
    body: bytes


class ResponseRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    previous_response_id: str | None
    status: str
    background: bool
    created_at: float
    updated_at: float
    expires_at: float | None
    #: ``msgspec`` JSON of the decoded request.
    request: bytes
    #: ``msgspec`` JSON of the response events, a tagged union that round-trips exactly.
    events: bytes
    keepalive_seqs: tuple[int, ...] = ()

    def decoded_events(self) -> list[ResponseEvent]:
        return list(_events_decoder.decode(self.events))

    def decoded_request(self) -> ResponsesRequest:
        return _request_decoder.decode(self.request)

    def snapshot(self) -> Snapshot:
        return fold(self.decoded_events())

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATUSES


def encode_seqs(seqs: Sequence[int]) -> str:
    return _encode(list(seqs)).decode()


def decode_seqs(text: str | bytes) -> tuple[int, ...]:
    return tuple(_seqs_decoder.decode(text))


def decode_item(body: bytes) -> dict[str, Any]:
    return _item_decoder.decode(body)


def _minted_id(item: dict[str, Any]) -> str:
    prefix = "msg" if item.get("type", "message") == "message" else "item"
    return f"{prefix}_{secrets.token_hex(16)}"


def conversation_items(input_items: Sequence[dict[str, Any]], snapshot: Snapshot) -> list[StoredItem]:
    """The rows of one response's items: its own input items, then its output."""
    rows: list[StoredItem] = []
    for item in input_items:
        given = item.get("id")
        rows.append(
            StoredItem(
                position=len(rows),
                role="input",
                item_id=given if isinstance(given, str) and given else _minted_id(item),
                body=_encode(item),
            )
        )
    for output in snapshot.output():
        rows.append(StoredItem(position=len(rows), role="output", item_id=output.id, body=_encode(output)))
    return rows


def make_record(
    *,
    request: ResponsesRequest,
    events: Sequence[ResponseEvent],
    keepalive_seqs: Sequence[int],
    status: str,
    ttl: float | None,
    now: float | None = None,
) -> ResponseRecord:
    opened = events[0]
    if not isinstance(opened, Opened):
        raise ProtocolViolation("a stored log starts with Opened")
    now = time.time() if now is None else now
    return ResponseRecord(
        id=opened.response_id,
        previous_response_id=request.previous_response_id,
        status=status,
        background=bool(request.background),
        created_at=float(opened.created_at),
        updated_at=now,
        expires_at=None if ttl is None else now + ttl,
        request=_encode(request),
        events=_encode(list(events)),
        keepalive_seqs=tuple(keepalive_seqs),
    )


def page_item(row: StoredItem) -> dict[str, Any]:
    """An input item as ``GET .../input_items`` lists it: always with an id."""
    item = decode_item(row.body)
    item.setdefault("id", row.item_id)
    item.setdefault("type", "message")
    return item


_item_decoder = msgspec.json.Decoder(dict[str, Any])


class DuplicateItem(StoreError):
    """An item id the conversation already holds (ids are unique within a conversation)."""

    def __init__(self, item_id: str) -> None:
        super().__init__(item_id)
        self.item_id = item_id


class ConversationRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    created_at: int
    metadata: dict[str, str]

    def body(self) -> dict[str, Any]:
        """The Conversation object as OpenAI returns it."""
        return {
            "id": self.id,
            "object": "conversation",
            "created_at": self.created_at,
            "metadata": self.metadata,
        }


class ConversationItem(msgspec.Struct, frozen=True, kw_only=True):
    position: int
    item_id: str
    #: The item as JSON, exactly as it was appended.
    body: bytes

    def decoded(self) -> dict[str, Any]:
        return _item_decoder.decode(self.body)


class ItemPage(msgspec.Struct, frozen=True, kw_only=True):
    items: list[ConversationItem]
    has_more: bool

    def body(self) -> dict[str, Any]:
        """The list object of ``GET /v1/conversations/{id}/items``."""
        return {
            "object": "list",
            "data": [item.decoded() for item in self.items],
            "first_id": self.items[0].item_id if self.items else None,
            "last_id": self.items[-1].item_id if self.items else None,
            "has_more": self.has_more,
        }


#: One item to append: its id (the caller mints one for an item that came without) and body.
NewItem = tuple[str, dict[str, Any]]
