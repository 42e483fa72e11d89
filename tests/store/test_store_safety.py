"""Store safety: private files, a size cap that evicts the oldest first, no newer schema misread."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import msgspec
import pytest

from accord.adapters.build import open_store
from accord.adapters.store import SQLiteStore
from accord.errors import ConfigError
from tests.serving import scripted_settings, write_script
from tests.store.records import run_record, service


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_database_and_data_dir_are_private(tmp_path: Path) -> None:
    data = tmp_path / "fresh" / "data"
    store = open_store(scripted_settings(write_script(tmp_path, []), data_dir=data))
    assert isinstance(store, SQLiteStore)
    try:
        assert _mode(data) == 0o700
        assert _mode(store.path) == 0o600
    finally:
        store.close()


def test_a_database_from_a_newer_accord_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE accord_schema SET version = version + 1")
    with pytest.raises(ConfigError, match="newer"):
        SQLiteStore(path)


@pytest.mark.anyio
async def test_past_the_size_cap_the_oldest_responses_go_first(tmp_path: Path) -> None:
    svc = service(tmp_path)
    store = SQLiteStore(tmp_path / "capped.db")
    try:
        ids = []
        for n in range(6):
            record, items, _ = await run_record(svc, {"input": f"question {n} " + "x" * 2000})
            record = msgspec.structs.replace(record, created_at=float(n))
            await store.save(record, items)
            ids.append(record.id)
        one = len(record.request) + len(record.events) + sum(len(i.body) for i in items)
        evicted = await store.evict(3 * one + one // 2)
        assert evicted == 3
        kept = [rid for rid in ids if await store.get(rid) is not None]
        assert kept == ids[3:]
        assert await store.evict(10 * one) == 0
    finally:
        store.close()
