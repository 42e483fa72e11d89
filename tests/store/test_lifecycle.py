"""Retention and shutdown: expired responses are swept, and a shutdown loses nothing stored."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from accord.adapters.store import SQLiteStore
from tests.serving import running, scripted_settings, write_script

RULES: list[dict[str, Any]] = [
    {"when": {"last_input": "^endless"}, "output": "tick " * 2000, "chunk_chars": 5, "chunk_delay_s": 0.01},
    {"output": "kept for a while"},
]


def _rows(path: Path) -> int:
    store = SQLiteStore(path)
    try:
        with store.transaction(write=False) as cur:
            cur.execute("SELECT COUNT(*) FROM accord_responses")
            return int(cur.fetchone()[0])
    finally:
        store.close()


def test_expired_responses_disappear_and_are_swept(tmp_path: Path) -> None:
    """--store-ttl: past its time a response is not found at once, and the background sweep deletes it."""
    settings = scripted_settings(write_script(tmp_path, RULES), store_ttl=0.3)
    db = Path(settings.data_dir) / "accord.db"
    with running(settings) as srv:
        created = httpx.post(srv.v1 + "/responses", json={"input": "hi"}).json()
        assert httpx.get(srv.v1 + f"/responses/{created['id']}").status_code == 200
        deadline = time.monotonic() + 10
        while _rows(db) and time.monotonic() < deadline:
            threading.Event().wait(0.1)
        assert _rows(db) == 0
        assert httpx.get(srv.v1 + f"/responses/{created['id']}").status_code == 404


@pytest.mark.parametrize("worker_class", ["asyncio", "trio"])
def test_a_background_run_cut_by_shutdown_is_stored_as_failed(tmp_path: Path, worker_class: str) -> None:
    """H3: the run ends with server_shutting_down and that ending is written before the server exits."""
    settings = scripted_settings(write_script(tmp_path, RULES), worker_class=worker_class, shutdown_grace=0.2)
    with running(settings) as srv:
        started = httpx.post(srv.v1 + "/responses", json={"input": "endless", "background": True}).json()
    store = SQLiteStore(Path(settings.data_dir) / "accord.db")
    try:
        record = anyio.run(store.get, started["id"])
    finally:
        store.close()
    assert record is not None and record.status == "failed"
    assert record.snapshot().error == {
        "code": "server_shutting_down",
        "message": "the server is shutting down",
    }


def _checkpointers() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "accord-sqlite-checkpoint")


def test_a_store_dropped_without_close_leaves_no_thread_behind(tmp_path: Path) -> None:
    """An app built and never served drops its store unclosed; its checkpoint thread must end with it.

    Left running, each one woke every second for the life of the process: a test session that built
    1,400 apps this way ran every later test beside 1,400 such threads.
    """
    gc.collect()
    before = _checkpointers()
    for n in range(20):
        SQLiteStore(tmp_path / f"{n}.db")  # dropped at once, never closed
    gc.collect()
    deadline = time.monotonic() + 5
    while _checkpointers() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _checkpointers() == before
    kept = SQLiteStore(tmp_path / "kept.db")
    assert _checkpointers() == before + 1  # a store in use keeps its thread
    kept.close()
    assert _checkpointers() == before
