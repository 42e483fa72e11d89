"""Stored responses (SPEC S1-S5), persistence only: SQLite embedded by default, PostgreSQL when shared.

A stored response is its event log: the JSON body is the log's fold and a replayed stream
its projection, with the same sequence numbers as the live one. Nothing here knows a
transport; the routes that read the store live in :mod:`accord.adapters.http`.
"""

from accord.errors import StoreError

from ._conversations import ConversationItem, ConversationRecord, DuplicateItem, ItemPage, NewItem
from ._postgres import PostgresStore
from ._protocol import ChainBroken, History, Page, ResponseStore, UnknownCursor
from ._records import ResponseRecord, StoredItem, conversation_items, make_record, page_item
from ._replay import after, replay
from ._sqlite import SQLiteStore

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
