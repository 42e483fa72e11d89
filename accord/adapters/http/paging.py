"""What the list and item routes read from a request: path ids, integer queries, OpenAI's paging.

Every OpenAI list takes ``after`` (the id the previous page ended on), ``limit`` (1 to 100, 20
when absent) and ``order`` (``asc`` or ``desc``, newest first when absent), and answers a
``list`` object with ``first_id``, ``last_id`` and ``has_more``. The stored responses' input
items and a conversation's items are both such lists, so both routes read them here. A value
the client got wrong is a 400 whose ``param`` names the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from accord.adapters.http.exchange import Exchange
from accord.errors import RequestError

Order = Literal["asc", "desc"]

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


@dataclass(frozen=True)
class PageQuery:
    """One page as the client asked for it."""

    after: str | None
    limit: int
    order: Order

    def unknown_after(self, item: str, container: str) -> RequestError:
        """The 400 for an ``after`` naming no ``item`` of ``container``."""
        return RequestError(f"No {item} with id '{self.after}' in {container}.", param="after")


def path_part(ex: Exchange, name: str = "id") -> str:
    """A named part of the matched route's path (``/v1/responses/(?P<id>...)``)."""
    assert ex.match is not None, "read only inside a handler, after routing"
    return ex.match[name]


def query_int(ex: Exchange, name: str, default: int, low: int, high: int) -> int:
    """The query parameter ``name`` as an integer in ``[low, high]``; ``default`` when absent."""
    raw = ex.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise RequestError(f"'{name}' must be an integer.", param=name) from None
    if not low <= value <= high:
        raise RequestError(f"'{name}' must be between {low} and {high}.", param=name)
    return value


def page_query(ex: Exchange) -> PageQuery:
    """``after``, ``limit`` and ``order`` of a list request."""
    limit = query_int(ex, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    order: Order
    match ex.query.get("order", "desc"):
        case "asc":
            order = "asc"
        case "desc":
            order = "desc"
        case _:
            raise RequestError("'order' must be 'asc' or 'desc'.", param="order")
    return PageQuery(after=ex.query.get("after") or None, limit=limit, order=order)


def list_body(data: list[dict[str, Any]], *, has_more: bool) -> dict[str, Any]:
    """An OpenAI ``list`` object of ``data`` (items with an ``id``)."""
    return {
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": has_more,
    }
