"""The SQL both stores share: schema, migrations and every query, run in worker threads.

Strategy: the database drivers are used through their synchronous APIs inside
``anyio.to_thread.run_sync``, so one implementation serves asyncio and trio alike, and a
slow query never blocks the event loop. Each public method is one short transaction.
Queries are written once with ``?`` placeholders; a dialect rewrites them for its driver.

A response's history is not copied into it: each row keeps its own items and the id it
continued from, and one recursive query walks that chain back. Storage stays linear in
the conversation's length instead of quadratic.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import anyio.to_thread

from accord.adapters.store._conversations import CONVERSATION_MIGRATION, ConversationQueries
from accord.adapters.store._eviction import evict_oldest
from accord.adapters.store._protocol import ChainBroken, Cursor, History, Order, Page, UnknownCursor
from accord.adapters.store._records import (
    ResponseRecord,
    StoredItem,
    decode_item,
    decode_seqs,
    encode_seqs,
)
from accord.errors import ConfigError

T = TypeVar("T")

#: Migrations by version; ``{blob}`` is the dialect's binary type. Append, never edit.
MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE accord_responses (
            id TEXT PRIMARY KEY,
            previous_response_id TEXT,
            status TEXT NOT NULL,
            background INTEGER NOT NULL DEFAULT 0,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            expires_at DOUBLE PRECISION,
            cancel_requested INTEGER NOT NULL DEFAULT 0,
            request {blob} NOT NULL,
            events {blob} NOT NULL,
            keepalive_seqs TEXT NOT NULL
        )""",
        "CREATE INDEX accord_responses_previous ON accord_responses (previous_response_id)",
        "CREATE INDEX accord_responses_expires ON accord_responses (expires_at)",
        """CREATE TABLE accord_items (
            response_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            role TEXT NOT NULL,
            item_id TEXT NOT NULL,
            body {blob} NOT NULL,
            PRIMARY KEY (response_id, position)
        )""",
        "CREATE INDEX accord_items_item_id ON accord_items (item_id)",
    ],
    CONVERSATION_MIGRATION,
]

_COLUMNS = (
    "id, previous_response_id, status, background, created_at, updated_at, expires_at, "
    "request, events, keepalive_seqs"
)
_UPSERT = (
    f"INSERT INTO accord_responses ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at, "
    "expires_at = excluded.expires_at, events = excluded.events, "
    "keepalive_seqs = excluded.keepalive_seqs"
)
_GET = f"SELECT {_COLUMNS} FROM accord_responses WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)"
_CHAIN = """
WITH RECURSIVE chain(id, prev, depth) AS (
    SELECT id, previous_response_id, 0 FROM accord_responses WHERE id = ?
    UNION ALL
    SELECT r.id, r.previous_response_id, chain.depth + 1
    FROM accord_responses r JOIN chain ON r.id = chain.prev
    WHERE chain.depth < 100000
)
SELECT chain.depth, chain.prev, i.body FROM chain
LEFT JOIN accord_items i ON i.response_id = chain.id
ORDER BY chain.depth DESC, i.position ASC
"""
_UNREFERENCED_EXPIRED = (
    "SELECT id FROM accord_responses WHERE expires_at < ? AND NOT EXISTS "
    "(SELECT 1 FROM accord_responses c WHERE c.previous_response_id = accord_responses.id)"
)


def _record(row: Sequence[Any]) -> ResponseRecord:
    return ResponseRecord(
        id=row[0],
        previous_response_id=row[1],
        status=row[2],
        background=bool(row[3]),
        created_at=float(row[4]),
        updated_at=float(row[5]),
        expires_at=None if row[6] is None else float(row[6]),
        request=bytes(row[7]),
        events=bytes(row[8]),
        keepalive_seqs=decode_seqs(row[9]),
    )


class SqlStore(ConversationQueries, abc.ABC):
    """Every query of the response store; a dialect supplies connections and placeholders.

    The conversation queries live in :mod:`._conversations`."""

    kind = "sql"
    placeholder = "?"

    @abc.abstractmethod
    def transaction(self, *, write: bool, batch: bool = False) -> AbstractContextManager[Cursor]:
        """A cursor inside one transaction, committed on a clean exit (called in a worker thread).

        ``batch``: the statements need no result before the commit, so a networked dialect may
        send them all at once.
        """

    @abc.abstractmethod
    def close(self) -> None: ...

    def q(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    async def _call(self, fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn)

    # -- schema ----------------------------------------------------------------------
    def migrate(self, cur: Cursor, blob: str) -> int:
        """Apply the migrations this database has not seen; returns the version it is at."""
        cur.execute("CREATE TABLE IF NOT EXISTS accord_schema (version INTEGER NOT NULL)")
        cur.execute("SELECT version FROM accord_schema")
        row = cur.fetchone()
        version = int(row[0]) if row is not None else 0
        if version > len(MIGRATIONS):
            # A newer accord wrote this database; this code would misread what it added.
            raise ConfigError(
                f"the store's schema is at version {version}, newer than this accord knows "
                f"({len(MIGRATIONS)}); run a newer accord or point --store elsewhere"
            )
        if row is None:
            cur.execute(self.q("INSERT INTO accord_schema (version) VALUES (?)"), (0,))
        for number, statements in enumerate(MIGRATIONS[version:], start=version + 1):
            for statement in statements:
                cur.execute(statement.format(blob=blob))
            cur.execute(self.q("UPDATE accord_schema SET version = ?"), (number,))
        return len(MIGRATIONS)

    # -- the protocol ----------------------------------------------------------------
    async def save(self, record: ResponseRecord, items: Sequence[StoredItem]) -> None:
        params = (
            record.id,
            record.previous_response_id,
            record.status,
            int(record.background),
            record.created_at,
            record.updated_at,
            record.expires_at,
            record.request,
            record.events,
            encode_seqs(record.keepalive_seqs),
        )
        rows = [(record.id, it.position, it.role, it.item_id, it.body) for it in items]
        upsert, clear = self.q(_UPSERT), self.q("DELETE FROM accord_items WHERE response_id = ?")
        insert = self.q(
            "INSERT INTO accord_items (response_id, position, role, item_id, body) VALUES (?, ?, ?, ?, ?)"
        )

        def run() -> None:
            with self.transaction(write=True, batch=True) as cur:
                cur.execute(upsert, params)
                cur.execute(clear, (record.id,))
                if rows:
                    cur.executemany(insert, rows)

        await self._call(run)

    async def get(self, response_id: str) -> ResponseRecord | None:
        sql, now = self.q(_GET), time.time()

        def run() -> ResponseRecord | None:
            with self.transaction(write=False) as cur:
                cur.execute(sql, (response_id, now))
                row = cur.fetchone()
            return None if row is None else _record(row)

        return await self._call(run)

    async def delete(self, response_id: str) -> bool:
        return await self._delete(
            response_id,
            "DELETE FROM accord_items WHERE response_id = ?",
            "DELETE FROM accord_responses WHERE id = ?",
        )

    async def history(self, response_id: str) -> History | None:
        chain = self.q(_CHAIN)
        status = self.q(
            "SELECT status FROM accord_responses WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)"
        )
        now = time.time()

        def run() -> History | None:
            with self.transaction(write=False) as cur:
                cur.execute(status, (response_id, now))
                head = cur.fetchone()
                if head is None:
                    return None
                cur.execute(chain, (response_id,))
                rows = cur.fetchall()
            oldest_prev = rows[0][1] if rows else None
            if oldest_prev is not None:
                raise ChainBroken(str(oldest_prev))
            items = [decode_item(bytes(body)) for _, _, body in rows if body is not None]
            return History(status=str(head[0]), items=items)

        return await self._call(run)

    async def items(self, item_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        wanted = list(dict.fromkeys(item_ids))
        if not wanted:
            return {}
        marks = ", ".join("?" * len(wanted))
        # Output items first: an id the server minted names exactly one item, whereas a
        # client may have sent the same input item id in several requests.
        sql = self.q(
            f"SELECT item_id, body FROM accord_items WHERE item_id IN ({marks}) "
            "ORDER BY CASE WHEN role = 'output' THEN 0 ELSE 1 END DESC"
        )

        def run() -> dict[str, dict[str, Any]]:
            with self.transaction(write=False) as cur:
                cur.execute(sql, tuple(wanted))
                rows = cur.fetchall()
            # Later rows win, and the ORDER BY puts output items last.
            return {str(item_id): decode_item(bytes(body)) for item_id, body in rows}

        return await self._call(run)

    async def input_items(
        self, response_id: str, *, after: str | None, limit: int, order: Order
    ) -> Page | None:
        exists = self.q(
            "SELECT 1 FROM accord_responses WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)"
        )
        cursor_of = self.q(
            "SELECT position FROM accord_items WHERE response_id = ? AND role = 'input' AND item_id = ?"
        )
        direction, compare = ("ASC", ">") if order == "asc" else ("DESC", "<")
        page = (
            "SELECT position, role, item_id, body FROM accord_items WHERE response_id = ? AND role = 'input'"
        )
        now = time.time()

        def run() -> Page | None:
            with self.transaction(write=False) as cur:
                cur.execute(exists, (response_id, now))
                if cur.fetchone() is None:
                    return None
                params: tuple[Any, ...] = (response_id,)
                sql = page
                if after is not None:
                    cur.execute(cursor_of, (response_id, after))
                    found = cur.fetchone()
                    if found is None:
                        raise UnknownCursor(after)
                    sql += f" AND position {compare} ?"
                    params += (int(found[0]),)
                cur.execute(self.q(sql + f" ORDER BY position {direction} LIMIT ?"), (*params, limit + 1))
                rows = cur.fetchall()
            items = [
                StoredItem(position=int(p), role=role, item_id=str(i), body=bytes(b))
                for p, role, i, b in rows
            ]
            return Page(items=items[:limit], has_more=len(items) > limit)

        return await self._call(run)

    async def request_cancel(self, response_id: str) -> bool:
        sql = self.q("UPDATE accord_responses SET cancel_requested = 1 WHERE id = ?")

        def run() -> bool:
            with self.transaction(write=True) as cur:
                cur.execute(sql, (response_id,))
                return cur.rowcount > 0

        return await self._call(run)

    async def cancel_requested(self, response_id: str) -> bool:
        sql = self.q("SELECT cancel_requested FROM accord_responses WHERE id = ?")

        def run() -> bool:
            with self.transaction(write=False) as cur:
                cur.execute(sql, (response_id,))
                row = cur.fetchone()
            return bool(row and row[0])

        return await self._call(run)

    async def sweep(self, now: float) -> int:
        doomed = self.q(_UNREFERENCED_EXPIRED)
        items = self.q(f"DELETE FROM accord_items WHERE response_id IN ({_UNREFERENCED_EXPIRED})")
        responses = self.q(f"DELETE FROM accord_responses WHERE id IN ({_UNREFERENCED_EXPIRED})")

        def run() -> int:
            removed = 0
            # A chain expires from its newest response back, one generation per round:
            # an older response stays while a stored one still continues from it.
            for _ in range(1000):
                with self.transaction(write=True) as cur:
                    cur.execute(doomed, (now,))
                    if not cur.fetchall():
                        break
                    cur.execute(items, (now,))
                    cur.execute(responses, (now,))
                    removed += max(cur.rowcount, 0)
            return removed

        return await self._call(run)

    async def evict(self, max_bytes: int) -> int:
        """Delete the oldest finished responses until the stored bytes are within ``max_bytes``."""
        return await self._call(lambda: evict_oldest(self, max_bytes))

    async def aclose(self) -> None:
        await self._call(self.close)
