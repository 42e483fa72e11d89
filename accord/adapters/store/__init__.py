"""Stored responses (SPEC S1-S5): SQLite embedded by default, PostgreSQL when shared.

A stored response is its event log: the JSON body is the log's fold and a replayed stream
its projection, with the same sequence numbers as the live one.
"""

from ._attach import StoreConfigError, attach_store, open_store
from ._conversations import ConversationItem, ConversationRecord, DuplicateItem, ItemPage, NewItem
from ._postgres import PostgresStore
from ._protocol import ChainBroken, History, Page, ResponseStore, StoreError, UnknownCursor
from ._records import ResponseRecord, StoredItem
from ._replay import replay
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
    "StoreConfigError",
    "StoreError",
    "StoredItem",
    "UnknownCursor",
    "attach_store",
    "open_store",
    "replay",
]
