"""The store protocol on both stores: what is written reads back whole, chains, pages, expiry, concurrency."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import msgspec
import pytest

from accord.adapters.store import ChainBroken, PostgresStore, SQLiteStore, UnknownCursor
from accord.adapters.store._sql import MIGRATIONS, SqlStore
from accord.events.response import fold
from tests.store.records import run_record, service

pytestmark = pytest.mark.anyio


def _open(url: str) -> SqlStore:
    if url.startswith("sqlite:///"):
        return SQLiteStore(Path(url[len("sqlite:///") :]))
    return PostgresStore(url)


@pytest.fixture
def store(store_url: str) -> Iterator[SqlStore]:
    opened = _open(store_url)
    try:
        yield opened
    finally:
        opened.close()


async def test_a_saved_response_reads_back_whole(store: SqlStore, tmp_path: Path) -> None:
    """The stored log folds to the very body the client got, and the record round-trips field by field."""
    record, items, sent = await run_record(service(tmp_path), {"input": "hi", "metadata": {"k": "v"}})
    await store.save(record, items)
    got = await store.get(record.id)
    assert got == record
    body = got.snapshot().body()
    assert msgspec.json.encode(body) == msgspec.json.encode(sent[-1].response)  # type: ignore[attr-defined]
    assert got.decoded_request().metadata == {"k": "v"}


async def test_history_is_each_turn_input_then_output_oldest_first(store: SqlStore, tmp_path: Path) -> None:
    """S1: a continuation sees every earlier turn's input items then its output items, in order."""
    svc = service(tmp_path)
    first, items1, _ = await run_record(svc, {"input": "one"})
    await store.save(first, items1)
    svc.store = store
    second, items2, _ = await run_record(svc, {"input": "two", "previous_response_id": first.id})
    await store.save(second, items2)
    history = await store.history(second.id)
    assert history is not None and history.status == "completed"
    kinds = [(item.get("role"), item["type"]) for item in history.items]
    assert kinds == [
        ("user", "message"),
        (None, "reasoning"),
        ("assistant", "message"),
        ("user", "message"),
        (None, "reasoning"),
        ("assistant", "message"),
    ]
    assert history.items[3]["content"][0]["text"] == "two"


async def test_a_chain_through_a_deleted_response_is_broken(store: SqlStore, tmp_path: Path) -> None:
    """Deleting really deletes; a later continuation says which link went missing rather than drop it."""
    svc = service(tmp_path)
    svc.store = store
    first, items1, _ = await run_record(svc, {"input": "one"})
    await store.save(first, items1)
    second, items2, _ = await run_record(svc, {"input": "two", "previous_response_id": first.id})
    await store.save(second, items2)
    assert await store.delete(first.id)
    with pytest.raises(ChainBroken) as info:
        await store.history(second.id)
    assert info.value.missing_id == first.id


async def test_unknown_ids_are_absent_everywhere(store: SqlStore) -> None:
    assert await store.get("resp_nope") is None
    assert await store.delete("resp_nope") is False
    assert await store.history("resp_nope") is None
    assert await store.input_items("resp_nope", after=None, limit=20, order="desc") is None
    assert await store.items(["msg_nope"]) == {}
    assert await store.request_cancel("resp_nope") is False


async def test_input_items_page_like_openai(store: SqlStore, tmp_path: Path) -> None:
    """``after``/``limit``/``order``: newest first by default, has_more when a page is cut short."""
    inputs = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    record, items, _ = await run_record(service(tmp_path), {"input": inputs})
    await store.save(record, items)

    def texts(page: object) -> list[str]:
        return [msgspec.json.decode(row.body)["content"][0]["text"] for row in page.items]  # type: ignore[attr-defined]

    first = await store.input_items(record.id, after=None, limit=2, order="desc")
    assert first is not None and texts(first) == ["m4", "m3"] and first.has_more
    second = await store.input_items(record.id, after=first.items[-1].item_id, limit=2, order="desc")
    assert second is not None and texts(second) == ["m2", "m1"] and second.has_more
    last = await store.input_items(record.id, after=second.items[-1].item_id, limit=2, order="desc")
    assert last is not None and texts(last) == ["m0"] and not last.has_more
    ascending = await store.input_items(record.id, after=None, limit=100, order="asc")
    assert ascending is not None and texts(ascending) == ["m0", "m1", "m2", "m3", "m4"]
    with pytest.raises(UnknownCursor):
        await store.input_items(record.id, after="msg_nope", limit=2, order="asc")


async def test_item_references_resolve_to_the_stored_item(store: SqlStore, tmp_path: Path) -> None:
    record, items, _ = await run_record(service(tmp_path), {"input": "hi"})
    await store.save(record, items)
    output = fold(record.decoded_events()).output()
    found = await store.items([output[1].id, "msg_unknown"])
    assert list(found) == [output[1].id]
    assert found[output[1].id] == msgspec.to_builtins(output[1])


async def test_expiry_hides_at_once_and_the_sweep_spares_what_is_continued(
    store: SqlStore, tmp_path: Path
) -> None:
    """Retention: expired is not found; the sweep removes a chain from its newest response back."""
    svc = service(tmp_path)
    svc.store = store
    old, items, _ = await run_record(svc, {"input": "old"}, ttl=3600)
    await store.save(old, items)
    child, child_items, _ = await run_record(
        svc, {"input": "child", "previous_response_id": old.id}, ttl=3600
    )
    await store.save(child, child_items)
    # The parent expires while its child lives: it is gone for readers, not for the child's history.
    await store.save(msgspec.structs.replace(old, expires_at=time.time() - 1), items)
    assert await store.get(old.id) is None
    history = await store.history(child.id)
    assert history is not None and len(history.items) == 6
    assert await store.sweep(time.time()) == 0
    assert await store.sweep(time.time() + 7200) == 2
    assert await store.history(child.id) is None


async def test_thirty_two_concurrent_writers_lose_nothing(store: SqlStore, tmp_path: Path) -> None:
    record, items, _ = await run_record(service(tmp_path), {"input": "hi"})
    ids = [f"resp_w{w}_{n}" for w in range(32) for n in range(5)]

    async def writer(w: int) -> None:
        for n in range(5):
            await store.save(msgspec.structs.replace(record, id=f"resp_w{w}_{n}"), items)

    async with anyio.create_task_group() as tg:
        for w in range(32):
            tg.start_soon(writer, w)
    for response_id in ids:
        got = await store.get(response_id)
        assert got is not None and got.events == record.events


async def test_a_second_store_on_the_same_database_reads_the_first_ones_writes(
    store_url: str, tmp_path: Path
) -> None:
    """Two openings (as two processes would) migrate once and see each other's commits at once."""
    a, b = _open(store_url), _open(store_url)
    try:
        record, items, _ = await run_record(service(tmp_path), {"input": "hi"})
        await a.save(record, items)
        assert await b.get(record.id) == record
        assert await b.request_cancel(record.id)
        assert await a.cancel_requested(record.id)
        with a.transaction(write=False) as cur:
            cur.execute("SELECT version FROM accord_schema")
            assert cur.fetchall() == [(len(MIGRATIONS),)]
    finally:
        a.close()
        b.close()
