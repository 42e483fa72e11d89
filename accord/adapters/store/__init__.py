"""Stored responses (SPEC S1-S5), persistence only: SQLite embedded by default, PostgreSQL when shared.

A stored response is its event log: the JSON body is the log's fold and a replayed stream
its projection, with the same sequence numbers as the live one. Nothing here knows a
transport; the routes that read the store live in :mod:`accord.adapters.http`.
"""

from typing import TYPE_CHECKING, Any

from accord.errors import StoreError

from ._protocol import ChainBroken, History, Page, ResponseStore, UnknownCursor
from ._records import (
    ConversationItem,
    ConversationRecord,
    DuplicateItem,
    ItemPage,
    NewItem,
    ResponseRecord,
    StoredItem,
    conversation_items,
    make_record,
    page_item,
)
from ._replay import after, replay
from ._sqlite import SQLiteStore

if TYPE_CHECKING:
    from ._postgres import PostgresStore


def __getattr__(name: str) -> Any:
    # psycopg is an extra ([postgres]) and costs a tenth of a second to import: only on use.
    if name == "PostgresStore":
        from ._postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ChainBroken",
    "ConversationItem",
    "ConversationRecord",
    "DuplicateItem",
    "History",
    "ItemPage",
    "NewItem",
    "Page",
    "PostgresStore",
    "ResponseRecord",
    "ResponseStore",
    "SQLiteStore",
    "StoreError",
    "StoredItem",
    "UnknownCursor",
    "after",
    "conversation_items",
    "make_record",
    "page_item",
    "replay",
]
