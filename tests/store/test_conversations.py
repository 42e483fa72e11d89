"""Conversations in the store, on SQLite and PostgreSQL (issue 15 item 2, store side).

CRUD, OpenAI's paging (``after``, ``limit``, ``order``), and the guarantee the HTTP
layer builds on: a turn's items are appended atomically and contiguously, so two
stores (two processes) appending to one conversation never interleave two turns.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accord.adapters.store import DuplicateItem, PostgresStore, ResponseStore, SQLiteStore, UnknownCursor

pytestmark = pytest.mark.anyio


def _open(url: str) -> ResponseStore:
    if url.startswith("sqlite:///"):
        return SQLiteStore(Path(url[len("sqlite:///") :]))
    return PostgresStore(url)


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[ResponseStore]:
    opened = _open(store_url)
    try:
        yield opened
    finally:
        await opened.aclose()


def _msg(n: int, tag: str = "t") -> tuple[str, dict[str, Any]]:
    return f"msg_{tag}{n}", {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": f"{tag}{n}"}],
    }


async def test_a_conversation_is_created_read_updated_and_deleted(store: ResponseStore) -> None:
    made = await store.create_conversation(
        "conv_a", created_at=7, metadata={"k": "v"}, items=[_msg(0), _msg(1)]
    )
    assert made.body() == {"id": "conv_a", "object": "conversation", "created_at": 7, "metadata": {"k": "v"}}
    assert await store.get_conversation("conv_a") == made
    updated = await store.update_conversation("conv_a", metadata={"k": "w"})
    assert updated is not None and updated.metadata == {"k": "w"}
    assert await store.conversation_context("conv_a") == [_msg(0)[1], _msg(1)[1]]
    item = await store.conversation_item("conv_a", "msg_t1")
    assert item is not None and item.decoded() == _msg(1)[1]
    assert await store.delete_conversation("conv_a")
    assert await store.get_conversation("conv_a") is None
    assert await store.conversation_item("conv_a", "msg_t1") is None
    assert not await store.delete_conversation("conv_a")


async def test_unknown_conversations_say_so(store: ResponseStore) -> None:
    assert await store.get_conversation("conv_none") is None
    assert await store.update_conversation("conv_none", metadata={}) is None
    assert await store.append_conversation_items("conv_none", [_msg(0)]) is None
    assert await store.conversation_items("conv_none") is None
    assert await store.conversation_context("conv_none") is None
    assert not await store.delete_conversation_item("conv_none", "msg_t0")


async def test_pages_follow_openai_paging(store: ResponseStore) -> None:
    await store.create_conversation("conv_p", created_at=1, metadata={}, items=[_msg(n) for n in range(5)])
    await store.append_conversation_items("conv_p", [_msg(n) for n in range(5, 7)])
    first = await store.conversation_items("conv_p", limit=3)  # default order: newest first
    assert first is not None
    assert first.body()["first_id"] == "msg_t6" and first.body()["last_id"] == "msg_t4"
    assert [i.item_id for i in first.items] == ["msg_t6", "msg_t5", "msg_t4"] and first.has_more
    rest = await store.conversation_items("conv_p", after="msg_t4", limit=10)
    assert rest is not None and [i.item_id for i in rest.items] == ["msg_t3", "msg_t2", "msg_t1", "msg_t0"]
    assert not rest.has_more
    asc = await store.conversation_items("conv_p", order="asc", after="msg_t1", limit=2)
    assert asc is not None and [i.item_id for i in asc.items] == ["msg_t2", "msg_t3"] and asc.has_more
    empty = await store.conversation_items("conv_p", order="asc", after="msg_t6")
    assert empty is not None and empty.body() == {
        "object": "list",
        "data": [],
        "first_id": None,
        "last_id": None,
        "has_more": False,
    }
    with pytest.raises(UnknownCursor):
        await store.conversation_items("conv_p", after="msg_elsewhere")


async def test_deleting_an_item_keeps_the_others_in_place(store: ResponseStore) -> None:
    await store.create_conversation("conv_d", created_at=1, metadata={}, items=[_msg(n) for n in range(3)])
    assert await store.delete_conversation_item("conv_d", "msg_t1")
    assert not await store.delete_conversation_item("conv_d", "msg_t1")
    appended = await store.append_conversation_items("conv_d", [_msg(3)])
    assert appended is not None and appended[0].position == 3
    assert [i["content"][0]["text"] for i in await store.conversation_context("conv_d") or []] == [
        "t0",
        "t2",
        "t3",
    ]


async def test_a_duplicate_item_id_appends_nothing(store: ResponseStore) -> None:
    await store.create_conversation("conv_u", created_at=1, metadata={}, items=[_msg(0)])
    with pytest.raises(DuplicateItem):
        await store.append_conversation_items("conv_u", [_msg(1), _msg(0)])
    with pytest.raises(DuplicateItem):
        await store.append_conversation_items("conv_u", [_msg(2), _msg(2)])
    assert await store.conversation_context("conv_u") == [_msg(0)[1]]


def _turns_are_whole(items: list[dict[str, Any]], turn_size: int) -> list[str]:
    """The turns in stored order; asserts each one's items are contiguous and in order."""
    turns: list[str] = []
    for start in range(0, len(items), turn_size):
        texts = [i["content"][0]["text"] for i in items[start : start + turn_size]]
        turn = texts[0].rsplit(":", 1)[0]
        assert texts == [f"{turn}:{n}" for n in range(turn_size)], f"interleaved at {start}: {texts}"
        turns.append(turn)
    return turns


def _turn(writer: str, t: int, size: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            f"msg_{writer}_{t}_{n}",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": f"{writer}.{t}:{n}"}],
            },
        )
        for n in range(size)
    ]


async def test_two_stores_on_one_database_never_interleave_turns(store_url: str) -> None:
    """Two store instances (as two processes hold them), many concurrent appenders each."""
    first, second = _open(store_url), _open(store_url)
    try:
        await first.create_conversation("conv_c", created_at=1, metadata={})
        size, turns = 4, 6

        async def writer(store: ResponseStore, name: str) -> None:
            for t in range(turns):
                assert await store.append_conversation_items("conv_c", _turn(name, t, size)) is not None

        async with anyio.create_task_group() as tg:
            for w in range(4):
                tg.start_soon(writer, first, f"a{w}")
                tg.start_soon(writer, second, f"b{w}")
        items = await second.conversation_context("conv_c")
        assert items is not None and len(items) == 8 * turns * size
        stored = _turns_are_whole(items, size)
        for w in [f"a{n}" for n in range(4)] + [f"b{n}" for n in range(4)]:
            assert [t for t in stored if t.startswith(w + ".")] == [f"{w}.{t}" for t in range(turns)]
    finally:
        await first.aclose()
        await second.aclose()


WRITER = """
import sys, anyio
from pathlib import Path
from accord.adapters.store import PostgresStore, SQLiteStore

url, name, turns, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

async def main() -> None:
    store = SQLiteStore(Path(url[len("sqlite:///"):])) if url.startswith("sqlite:///") else PostgresStore(url)
    try:
        for t in range(turns):
            items = [
                (f"msg_{name}_{t}_{n}", {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": f"{name}.{t}:{n}"}]})
                for n in range(size)
            ]
            assert await store.append_conversation_items("conv_x", items) is not None
    finally:
        await store.aclose()

anyio.run(main)
"""


ROOT = Path(__file__).resolve().parents[2]


def _spawn(tmp: Path, url: str, name: str, turns: int, size: int) -> subprocess.Popen[bytes]:
    script = tmp / "writer.py"
    script.write_text(WRITER)
    args = [sys.executable, str(script), url, name, str(turns), str(size)]
    return subprocess.Popen(args, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})


@pytest.mark.slow
async def test_two_processes_appending_never_interleave_turns(store_url: str, tmp_path: Path) -> None:
    store = _open(store_url)
    try:
        await store.create_conversation("conv_x", created_at=1, metadata={})
        size, turns = 5, 60
        procs = [_spawn(tmp_path, store_url, name, turns, size) for name in ("p", "q")]
        for proc in procs:
            assert await anyio.to_thread.run_sync(proc.wait) == 0
        items = await store.conversation_context("conv_x")
        assert items is not None and len(items) == 2 * turns * size
        stored = _turns_are_whole(items, size)
        assert [t for t in stored if t.startswith("p.")] == [f"p.{t}" for t in range(turns)]
        assert [t for t in stored if t.startswith("q.")] == [f"q.{t}" for t in range(turns)]
    finally:
        await store.aclose()


@settings(max_examples=25, deadline=None)
@given(
    count=st.integers(0, 12),
    limit=st.integers(1, 5),
    order=st.sampled_from(["asc", "desc"]),
)
def test_paging_through_every_page_yields_every_item_once(
    tmp_path_factory: pytest.TempPathFactory, count: int, limit: int, order: str
) -> None:
    path = tmp_path_factory.mktemp("paging") / "store.db"

    async def main() -> None:
        store = SQLiteStore(path)
        try:
            await store.create_conversation(
                "conv_h", created_at=1, metadata={}, items=[_msg(n) for n in range(count)]
            )
            seen: list[str] = []
            after: str | None = None
            while True:
                page = await store.conversation_items("conv_h", after=after, limit=limit, order=order)  # type: ignore[arg-type]
                assert page is not None and len(page.items) <= limit
                seen += [i.item_id for i in page.items]
                if not page.has_more:
                    break
                after = page.items[-1].item_id
            expected = [f"msg_t{n}" for n in range(count)]
            assert seen == (expected if order == "asc" else expected[::-1])
        finally:
            await store.aclose()

    anyio.run(main)
