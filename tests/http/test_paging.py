"""Both item lists (a response's input items, a conversation's items) read one paging query.

``limit``, ``order`` and ``after`` are parsed once for both routes; a value the client got
wrong is a 400 whose ``param`` names the field on either route, and a page is the same
``list`` object on both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from accord.adapters.build import build_app
from tests.serving import scripted_settings, write_script

pytestmark = pytest.mark.anyio

ITEMS = [{"type": "message", "role": "user", "content": f"m{i}"} for i in range(3)]

REFUSED = [
    ({"limit": "ten"}, "limit", "'limit' must be an integer."),
    ({"limit": "0"}, "limit", "'limit' must be between 1 and 100."),
    ({"limit": "101"}, "limit", "'limit' must be between 1 and 100."),
    ({"order": "sideways"}, "order", "'order' must be 'asc' or 'desc'."),
    ({"after": "msg_nowhere"}, "after", None),
]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def _lists(tmp: Path) -> AsyncIterator[tuple[httpx.AsyncClient, list[str]]]:
    """A client of a fresh app, and the item-list URLs of one response and one conversation."""
    app = build_app(scripted_settings(write_script(tmp, [{"output": "ok"}])))
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        response = (await client.post("/v1/responses", json={"model": "m", "input": ITEMS})).json()
        conversation = (await client.post("/v1/conversations", json={"items": ITEMS})).json()
        yield (
            client,
            [
                f"/v1/responses/{response['id']}/input_items",
                f"/v1/conversations/{conversation['id']}/items",
            ],
        )


@pytest.mark.parametrize(("query", "param", "message"), REFUSED)
async def test_a_wrong_paging_value_is_a_400_naming_its_field_on_both_lists(
    tmp_path: Path, query: dict[str, str], param: str, message: str | None
) -> None:
    async with _lists(tmp_path) as (client, urls):
        for url in urls:
            answer = await client.get(url, params=query)
            assert answer.status_code == 400, (url, answer.text)
            error = answer.json()["error"]
            assert error["param"] == param, url
            if message is not None:
                assert error["message"] == message
            else:
                assert "msg_nowhere" in error["message"]


async def test_both_lists_page_alike(tmp_path: Path) -> None:
    async with _lists(tmp_path) as (client, urls):
        for url in urls:
            first = (await client.get(url, params={"limit": "2", "order": "asc"})).json()
            texts = [item["content"][0]["text"] for item in first["data"]]
            assert (first["object"], texts, first["has_more"]) == ("list", ["m0", "m1"], True), url
            assert (first["first_id"], first["last_id"]) == (first["data"][0]["id"], first["data"][1]["id"])
            rest = (await client.get(url, params={"after": first["last_id"], "order": "asc"})).json()
            assert [item["content"][0]["text"] for item in rest["data"]] == ["m2"], url
            assert rest["has_more"] is False
            newest = (await client.get(url, params={"limit": "1"})).json()
            assert [item["content"][0]["text"] for item in newest["data"]] == ["m2"], url
