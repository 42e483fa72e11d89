"""What the list and item routes read from a request: path ids, integer queries, OpenAI's paging.

Every OpenAI list takes ``after`` (the id the previous page ended on), ``limit`` (1 to 100, 20
when absent) and ``order`` (``asc`` or ``desc``, newest first when absent), and answers a
``list`` object with ``first_id``, ``last_id`` and ``has_more``. The stored responses' input
items and a conversation's items are both such lists, so both routes read them here. A value
the client got wrong is a 400 whose ``param`` names the field.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from accord.adapters.http.exchange import Exchange
from accord.adapters.store import UnknownCursor
from accord.errors import RequestError

Order = Literal["asc", "desc"]
PageT = TypeVar("PageT", covariant=True)

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


@dataclass(frozen=True)
class PageQuery:
    """One page as the client asked for it."""

    after: str | None
    limit: int
    order: Order


class Lister(Protocol[PageT]):
    """A store's read of one page of what ``owner`` holds; None when there is no such owner."""

    def __call__(
        self, owner: str, /, *, after: str | None, limit: int, order: Order
    ) -> Awaitable[PageT | None]: ...


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


async def read_page(ex: Exchange, lister: Lister[PageT], owner: str, item: str, within: str) -> PageT | None:
    """The page of ``owner``'s items the request asks for; None when there is no such owner.

    An ``after`` that names no ``item`` of the owner (``within``: the owner, in words) is a 400.
    """
    query = page_query(ex)
    try:
        return await lister(owner, after=query.after, limit=query.limit, order=query.order)
    except UnknownCursor:
        raise RequestError(f"No {item} with id '{query.after}' in {within}.", param="after") from None


def list_body(data: list[dict[str, Any]], *, has_more: bool) -> dict[str, Any]:
    """An OpenAI ``list`` object of ``data`` (items with an ``id``)."""
    return {
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": has_more,
    }
