"""Conversations (``/v1/conversations``): their rows, their items, and the queries on them.

A conversation is an ordered list of items that responses read as context and append to.
Each item has a ``position`` in its conversation; positions are handed out by bumping
the conversation row's ``next_position`` inside the transaction that inserts the items.
That row update takes the conversation's write lock (a row lock in PostgreSQL, the
database lock in SQLite), so appends to one conversation are serialised, each turn gets
one contiguous run of positions, and two processes appending turns to the same
conversation can never interleave their items. Appends to different conversations do
not wait for each other in PostgreSQL.

Paging follows OpenAI's list endpoints: ``after`` is an item id, ``limit`` a count,
``order`` ``asc`` or ``desc`` (by position); a page says whether more follow.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import msgspec

from accord.adapters.store._protocol import Cursor, Order, UnknownCursor
from accord.adapters.store._records import (
    ConversationItem,
    ConversationRecord,
    DuplicateItem,
    ItemPage,
    NewItem,
)

T = TypeVar("T")

#: The schema migration that adds conversations; ``{blob}`` is the dialect's binary type.
CONVERSATION_MIGRATION: list[str] = [
    """CREATE TABLE accord_conversations (
        id TEXT PRIMARY KEY,
        created_at BIGINT NOT NULL,
        metadata {blob} NOT NULL,
        next_position BIGINT NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE accord_conversation_items (
        conversation_id TEXT NOT NULL,
        position BIGINT NOT NULL,
        item_id TEXT NOT NULL,
        body {blob} NOT NULL,
        PRIMARY KEY (conversation_id, position)
    )""",
    "CREATE UNIQUE INDEX accord_conversation_items_id ON accord_conversation_items (conversation_id, item_id)",
]

_encode = msgspec.json.Encoder().encode
_metadata_decoder = msgspec.json.Decoder(dict[str, str])
_item_decoder = msgspec.json.Decoder(dict[str, Any])


_INSERT = (
    "INSERT INTO accord_conversation_items (conversation_id, position, item_id, body) VALUES (?, ?, ?, ?)"
)
_GET = "SELECT id, created_at, metadata FROM accord_conversations WHERE id = ?"
_BUMP = "UPDATE accord_conversations SET next_position = next_position + ? WHERE id = ?"
_NEXT = "SELECT next_position FROM accord_conversations WHERE id = ?"


def _conversation(row: Sequence[Any]) -> ConversationRecord:
    return ConversationRecord(
        id=str(row[0]), created_at=int(row[1]), metadata=_metadata_decoder.decode(row[2])
    )


class ConversationQueries(abc.ABC):
    """The conversation half of the SQL store; mixed into :class:`SqlStore`."""

    @abc.abstractmethod
    def transaction(self, *, write: bool, batch: bool = False) -> AbstractContextManager[Cursor]: ...

    @abc.abstractmethod
    def q(self, sql: str) -> str: ...

    @abc.abstractmethod
    async def _call(self, fn: Callable[[], T]) -> T: ...

    async def _delete(self, key: str, *statements: str) -> bool:
        """The DELETE ``statements`` run on ``key`` in one transaction; whether the last removed a row."""
        queries = [self.q(statement) for statement in statements]

        def run() -> bool:
            with self.transaction(write=True) as cur:
                for query in queries:
                    cur.execute(query, (key,))
                return cur.rowcount > 0

        return await self._call(run)

    def _append(
        self, cur: Cursor, conversation_id: str, items: Sequence[NewItem]
    ) -> list[ConversationItem] | None:
        """Inside a write transaction: lock the conversation, then add ``items`` after its last one."""
        cur.execute(self.q(_BUMP), (len(items), conversation_id))
        if cur.rowcount == 0:
            return None
        cur.execute(self.q(_NEXT), (conversation_id,))
        start = int(cur.fetchone()[0]) - len(items)
        if items:
            ids = [item_id for item_id, _ in items]
            seen: set[str] = set()
            for item_id in ids:
                if item_id in seen:
                    raise DuplicateItem(item_id)
                seen.add(item_id)
            marks = ", ".join("?" * len(ids))
            cur.execute(
                self.q(
                    "SELECT item_id FROM accord_conversation_items "
                    f"WHERE conversation_id = ? AND item_id IN ({marks})"
                ),
                (conversation_id, *ids),
            )
            taken = cur.fetchone()
            if taken is not None:
                raise DuplicateItem(str(taken[0]))
        rows = [
            ConversationItem(position=start + n, item_id=item_id, body=_encode(body))
            for n, (item_id, body) in enumerate(items)
        ]
        if rows:
            cur.executemany(self.q(_INSERT), [(conversation_id, r.position, r.item_id, r.body) for r in rows])
        return rows

    async def create_conversation(
        self,
        conversation_id: str,
        *,
        created_at: int,
        metadata: dict[str, str],
        items: Sequence[NewItem] = (),
    ) -> ConversationRecord:
        """A new conversation with its initial items, in one transaction."""
        insert = self.q("INSERT INTO accord_conversations (id, created_at, metadata) VALUES (?, ?, ?)")

        def run() -> ConversationRecord:
            with self.transaction(write=True) as cur:
                cur.execute(insert, (conversation_id, created_at, _encode(metadata)))
                self._append(cur, conversation_id, items)
            return ConversationRecord(id=conversation_id, created_at=created_at, metadata=dict(metadata))

        return await self._call(run)

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        sql = self.q(_GET)

        def run() -> ConversationRecord | None:
            with self.transaction(write=False) as cur:
                cur.execute(sql, (conversation_id,))
                row = cur.fetchone()
            return None if row is None else _conversation(row)

        return await self._call(run)

    async def update_conversation(
        self, conversation_id: str, *, metadata: dict[str, str]
    ) -> ConversationRecord | None:
        """Replace the metadata; None if the conversation is unknown."""
        update, get = self.q("UPDATE accord_conversations SET metadata = ? WHERE id = ?"), self.q(_GET)

        def run() -> ConversationRecord | None:
            with self.transaction(write=True) as cur:
                cur.execute(update, (_encode(metadata), conversation_id))
                if cur.rowcount == 0:
                    return None
                cur.execute(get, (conversation_id,))
                return _conversation(cur.fetchone())

        return await self._call(run)

    async def delete_conversation(self, conversation_id: str) -> bool:
        """Remove the conversation and all its items; False when there was none."""
        return await self._delete(
            conversation_id,
            "DELETE FROM accord_conversation_items WHERE conversation_id = ?",
            "DELETE FROM accord_conversations WHERE id = ?",
        )

    async def append_conversation_items(
        self, conversation_id: str, items: Sequence[NewItem]
    ) -> list[ConversationItem] | None:
        """Append one turn's items atomically and contiguously; None if the conversation is unknown.

        Raises :class:`DuplicateItem` (and appends nothing) when an id is already there.
        """

        def run() -> list[ConversationItem] | None:
            with self.transaction(write=True) as cur:
                return self._append(cur, conversation_id, items)

        return await self._call(run)

    async def conversation_items(
        self, conversation_id: str, *, after: str | None = None, limit: int = 20, order: Order = "desc"
    ) -> ItemPage | None:
        """One page of the conversation's items; None if it is unknown.

        Raises :class:`UnknownCursor` when ``after`` names no item of this conversation.
        """
        exists = self.q("SELECT 1 FROM accord_conversations WHERE id = ?")
        cursor_of = self.q(
            "SELECT position FROM accord_conversation_items WHERE conversation_id = ? AND item_id = ?"
        )
        direction, compare = ("ASC", ">") if order == "asc" else ("DESC", "<")
        page = "SELECT position, item_id, body FROM accord_conversation_items WHERE conversation_id = ?"

        def run() -> ItemPage | None:
            with self.transaction(write=False) as cur:
                cur.execute(exists, (conversation_id,))
                if cur.fetchone() is None:
                    return None
                params: tuple[Any, ...] = (conversation_id,)
                sql = page
                if after is not None:
                    cur.execute(cursor_of, (conversation_id, after))
                    found = cur.fetchone()
                    if found is None:
                        raise UnknownCursor(after)
                    sql += f" AND position {compare} ?"
                    params += (int(found[0]),)
                cur.execute(self.q(sql + f" ORDER BY position {direction} LIMIT ?"), (*params, limit + 1))
                rows = cur.fetchall()
            items = [ConversationItem(position=int(p), item_id=str(i), body=bytes(b)) for p, i, b in rows]
            return ItemPage(items=items[:limit], has_more=len(items) > limit)

        return await self._call(run)

    async def conversation_context(self, conversation_id: str) -> list[dict[str, Any]] | None:
        """Every item, oldest first, as a response reads them for context; None if unknown."""
        exists = self.q("SELECT 1 FROM accord_conversations WHERE id = ?")
        sql = self.q(
            "SELECT body FROM accord_conversation_items WHERE conversation_id = ? ORDER BY position ASC"
        )

        def run() -> list[dict[str, Any]] | None:
            with self.transaction(write=False) as cur:
                cur.execute(exists, (conversation_id,))
                if cur.fetchone() is None:
                    return None
                cur.execute(sql, (conversation_id,))
                rows = cur.fetchall()
            return [_item_decoder.decode(bytes(body)) for (body,) in rows]

        return await self._call(run)

    async def conversation_item(self, conversation_id: str, item_id: str) -> ConversationItem | None:
        sql = self.q(
            "SELECT position, item_id, body FROM accord_conversation_items WHERE conversation_id = ? AND item_id = ?"
        )

        def run() -> ConversationItem | None:
            with self.transaction(write=False) as cur:
                cur.execute(sql, (conversation_id, item_id))
                row = cur.fetchone()
            return (
                None
                if row is None
                else ConversationItem(position=int(row[0]), item_id=str(row[1]), body=bytes(row[2]))
            )

        return await self._call(run)

    async def delete_conversation_item(self, conversation_id: str, item_id: str) -> bool:
        """Remove one item (the others keep their positions); False when there was none."""
        sql = self.q("DELETE FROM accord_conversation_items WHERE conversation_id = ? AND item_id = ?")

        def run() -> bool:
            with self.transaction(write=True) as cur:
                cur.execute(sql, (conversation_id, item_id))
                return cur.rowcount > 0

        return await self._call(run)
