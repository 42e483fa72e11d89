"""The one async protocol every response store speaks (SPEC S3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

import msgspec

from accord.adapters.store._records import (
    ConversationItem,
    ConversationRecord,
    ItemPage,
    NewItem,
    ResponseRecord,
    StoredItem,
)
from accord.errors import StoreError

Order = Literal["asc", "desc"]


class ChainBroken(StoreError):
    """A response's history runs through a response that is no longer stored."""

    def __init__(self, missing_id: str) -> None:
        super().__init__(missing_id)
        self.missing_id = missing_id


class UnknownCursor(StoreError):
    """``after`` names no input item of that response."""


class History(msgspec.Struct, frozen=True, kw_only=True):
    """What a continuation of a response starts from."""

    #: Status of the response continued from (a background one may still be running).
    status: str
    #: Every earlier item, oldest first: each response's input items then its output items.
    items: list[dict[str, Any]]


class Page(msgspec.Struct, frozen=True, kw_only=True):
    items: list[StoredItem]
    has_more: bool


class ResponseStore(Protocol):
    """Stored responses, their logs and their conversation items.

    Every method is safe to call concurrently, from any task, on asyncio and on trio;
    writes are atomic: a reader sees a response whole or not at all.
    """

    #: ``sqlite`` or ``postgresql``.
    kind: str

    async def save(self, record: ResponseRecord, items: Sequence[StoredItem]) -> None:
        """Insert or replace the response and all its items in one transaction."""
        ...

    async def get(self, response_id: str) -> ResponseRecord | None:
        """The response, or None if it is unknown, deleted or expired."""
        ...

    async def delete(self, response_id: str) -> bool:
        """Remove the response and its items; False when there was none."""
        ...

    async def history(self, response_id: str) -> History | None:
        """The conversation up to and including ``response_id``; None if it is unknown.

        Raises :class:`ChainBroken` when an earlier response of the chain was removed.
        """
        ...

    async def items(self, item_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Stored items by id (for ``item_reference``); unknown ids are left out."""
        ...

    async def input_items(
        self, response_id: str, *, after: str | None, limit: int, order: Order
    ) -> Page | None:
        """One page of the response's own input items; None if the response is unknown."""
        ...

    async def request_cancel(self, response_id: str) -> bool:
        """Flag a running background response for cancellation by whichever process runs it."""
        ...

    async def cancel_requested(self, response_id: str) -> bool: ...

    async def sweep(self, now: float) -> int:
        """Remove expired responses no stored response continues from; returns how many."""
        ...

    # -- conversations (``_conversations``): a turn's items are appended atomically, in
    # one contiguous run, so concurrent appenders never interleave two turns.
    async def create_conversation(
        self,
        conversation_id: str,
        *,
        created_at: int,
        metadata: dict[str, str],
        items: Sequence[NewItem] = (),
    ) -> ConversationRecord: ...

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None: ...

    async def update_conversation(
        self, conversation_id: str, *, metadata: dict[str, str]
    ) -> ConversationRecord | None: ...

    async def delete_conversation(self, conversation_id: str) -> bool: ...

    async def append_conversation_items(
        self, conversation_id: str, items: Sequence[NewItem]
    ) -> list[ConversationItem] | None: ...

    async def conversation_items(
        self, conversation_id: str, *, after: str | None = None, limit: int = 20, order: Order = "desc"
    ) -> ItemPage | None: ...

    async def conversation_context(self, conversation_id: str) -> list[dict[str, Any]] | None: ...

    async def conversation_item(self, conversation_id: str, item_id: str) -> ConversationItem | None: ...

    async def delete_conversation_item(self, conversation_id: str, item_id: str) -> bool: ...

    async def evict(self, max_bytes: int) -> int:
        """Delete the oldest finished responses until the stored bytes are within ``max_bytes``."""
        ...

    async def aclose(self) -> None: ...


class Cursor(Protocol):
    """The part of a DB-API cursor the queries use (sqlite3 and psycopg both fit)."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...

    def executemany(self, sql: Any, params: Any, /) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...
