"""The store's size cap: when the stored bytes pass it, the oldest finished responses go first.

The size counted is what grows with use: each response's request and event log and its
conversation items, as the database measures them (``LENGTH`` of the binary columns; the
file itself is larger by indexes and free pages). A response still running (queued or in
progress, as background runs are) is never evicted. A continuation from an evicted
response is refused like one from an expired response (``ChainBroken``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol


class _Sql(Protocol):
    """What eviction uses of a SQL store (``SqlStore`` fits; named here to keep imports one way)."""

    def q(self, sql: str) -> str: ...

    def transaction(self, *, write: bool, batch: bool = False) -> AbstractContextManager[Any]: ...


_TOTAL_RESPONSES = "SELECT COALESCE(SUM(LENGTH(request) + LENGTH(events)), 0) FROM accord_responses"
_TOTAL_ITEMS = "SELECT COALESCE(SUM(LENGTH(body)), 0) FROM accord_items"
_OLDEST = (
    "SELECT r.id, LENGTH(r.request) + LENGTH(r.events) + "
    "COALESCE((SELECT SUM(LENGTH(i.body)) FROM accord_items i WHERE i.response_id = r.id), 0) "
    "FROM accord_responses r WHERE r.status NOT IN ('queued', 'in_progress') "
    "ORDER BY r.created_at ASC LIMIT 64"
)
_DELETE_ITEMS = "DELETE FROM accord_items WHERE response_id = ?"
_DELETE_RESPONSE = "DELETE FROM accord_responses WHERE id = ?"


def _total(cur: Any) -> int:
    size = 0
    for sql in (_TOTAL_RESPONSES, _TOTAL_ITEMS):
        cur.execute(sql)
        row = cur.fetchone()
        size += int(row[0]) if row is not None else 0
    return size


def evict_oldest(store: _Sql, max_bytes: int) -> int:
    """Delete the oldest finished responses until the stored size is within ``max_bytes``."""
    removed = 0
    while True:
        with store.transaction(write=True) as cur:
            size = _total(cur)
            if size <= max_bytes:
                return removed
            cur.execute(store.q(_OLDEST))
            oldest = cur.fetchall()
            if not oldest:
                return removed
            for response_id, weight in oldest:
                cur.execute(store.q(_DELETE_ITEMS), (response_id,))
                cur.execute(store.q(_DELETE_RESPONSE), (response_id,))
                removed += 1
                size -= int(weight or 0)
                if size <= max_bytes:
                    break
