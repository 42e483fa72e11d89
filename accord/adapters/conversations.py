"""Conversations as responses use them: which one a request names, its items, and each turn appended.

A request with ``conversation`` (an id, or ``{"id": ...}``) is rendered after the
conversation's items, in order, and when it ends its turn is appended: the request's own
input items, then the response's output items, in one store call, so the turn occupies one
contiguous run of positions whatever else appends to the same conversation (the store
guarantees that, on SQLite and PostgreSQL alike). The turn is appended just before the
terminal event goes out, like the stored response itself, so a client that has seen the
end can list the conversation and find its turn there. A failed or cancelled response
appends nothing.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from accord.adapters.requests import conversation_ref, convert_item, explicit_item
from accord.adapters.store import DuplicateItem, NewItem, ResponseStore
from accord.events.wire import EventLog

if TYPE_CHECKING:
    # Only for annotations: the run hook receives these objects, it never builds them.
    from accord.adapters.runner import Outcome
    from accord.adapters.service import Prepared

#: Statuses whose turn is appended to the conversation.
_APPENDED = ("completed", "incomplete")


def item_id(item: dict[str, Any]) -> str:
    """The item's own id, or a fresh one of OpenAI's shape for its type."""
    given = item.get("id")
    if isinstance(given, str) and given:
        return given
    prefix = "msg" if item.get("type", "message") == "message" else "item"
    return f"{prefix}_{secrets.token_hex(16)}"


def with_id(item: dict[str, Any]) -> NewItem:
    """An explicit item ready to append: its id, and the body carrying that id (and a status)."""
    body = dict(item)
    body["id"] = item_id(item)
    if body.get("type") == "message":
        body.setdefault("status", "completed")
    return body["id"], body


def new_items(raw: Sequence[Any], param: str) -> list[NewItem]:
    """Items a client sends (``POST .../items``, a new conversation): validated, made explicit."""
    return [with_id(explicit_item(convert_item(item, f"{param}[{i}]"))) for i, item in enumerate(raw)]


def turn_items(prepared: Prepared, log_: EventLog) -> list[NewItem]:
    """One response's turn: the request's own input items, then its output items."""
    items = [with_id(item) for item in prepared.conversation.input_items]
    items += [(output.id, msgspec.to_builtins(output)) for output in log_.snapshot.output()]
    return items


async def append_turn(store: ResponseStore, conversation_id: str, items: list[NewItem]) -> None:
    """Append one turn, leaving out items the conversation already holds (a client re-sent them)."""
    pending = list(items)
    while pending:
        try:
            await store.append_conversation_items(conversation_id, pending)
            return
        except DuplicateItem as exc:
            pending = [item for item in pending if item[0] != exc.item_id]


class ConversationTurns:
    """The run hook that appends each finished response's turn to the conversation it names."""

    persists = True

    def __init__(self, store: ResponseStore) -> None:
        self.store = store

    async def before_terminal(self, prepared: Prepared, log_: EventLog) -> None:
        conversation_id = conversation_ref(prepared.request.conversation)
        if conversation_id is None or log_.snapshot.status not in _APPENDED:
            return
        await append_turn(self.store, conversation_id, turn_items(prepared, log_))

    async def after_run(self, prepared: Prepared, outcome: Outcome) -> None:
        return None
