"""References a request makes to stored state, read and checked where the request is read."""

from __future__ import annotations

from typing import Any

from accord.errors import RequestError


def conversation_ref(value: str | dict[str, Any] | None) -> str | None:
    """The conversation id a request's ``conversation`` field names, or a 400 naming it."""
    if value is None:
        return None
    if isinstance(value, dict):
        value = value.get("id")
        if not isinstance(value, str):
            raise RequestError("'conversation.id' must be a string.", param="conversation.id")
    if not value:
        raise RequestError("'conversation' must name a conversation id.", param="conversation")
    return value
