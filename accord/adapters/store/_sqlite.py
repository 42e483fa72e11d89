"""The embedded store: one SQLite file (SPEC S3), shared safely by several processes.

WAL lets readers run beside the one writer; ``synchronous=NORMAL`` keeps every committed
transaction across a crash of the process (only a power loss can cost the last ones);
writers take the lock up front (``BEGIN IMMEDIATE``) and wait for it up to the busy
timeout instead of failing when another process is writing. Connections live in a small
pool, each used by one worker thread at a time.

Checkpoints (copying the WAL back into the database file, with an fsync) would otherwise
fall on whichever commit crosses the WAL size limit, adding milliseconds to that response's
terminal event; a thread of the store's own runs them instead, passively, once a second.
"""

from __future__ import annotations

import os
import queue
import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from accord.adapters.store._protocol import Cursor
from accord.adapters.store._sql import SqlStore
from accord.errors import StoreError

BUSY_TIMEOUT_S = 30.0
CHECKPOINT_INTERVAL_S = 1.0


class SQLiteStore(SqlStore):
    kind = "sqlite"

    def __init__(self, path: Path, *, pool_size: int = 8) -> None:
        self.path = Path(path)
        # Every prompt is in this file: only its owner may read it (the WAL and shared-memory
        # files SQLite makes beside it take the database file's permissions).
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._size = max(1, pool_size)
        self._closed = False
        self._stop = threading.Event()
        with self.transaction(write=True) as cur:
            self.migrate(cur, "BLOB")
        # The thread holds the path and the stop flag, not the store: a store dropped without
        # close (an app built and never served) stops its thread when it is collected, instead
        # of leaving one behind that wakes every second for the life of the process.
        self._checkpointer = threading.Thread(
            target=_checkpoint_loop,
            args=(self.path, self._stop),
            name="accord-sqlite-checkpoint",
            daemon=True,
        )
        self._checkpointer.start()
        weakref.finalize(self, self._stop.set)

    def _connect(self) -> sqlite3.Connection:
        return _connect(self.path)

    @contextmanager
    def _borrow(self) -> Iterator[sqlite3.Connection]:
        if self._closed:
            raise StoreError("the store is closed")
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            with self._lock:
                grow = len(self._all) < self._size
                if grow:
                    conn = self._connect()
                    self._all.append(conn)
            if not grow:
                conn = self._idle.get()
        try:
            yield conn
        finally:
            self._idle.put(conn)

    @contextmanager
    def transaction(self, *, write: bool, batch: bool = False) -> Iterator[Cursor]:
        with self._borrow() as conn:
            cur = conn.cursor()
            cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            else:
                cur.execute("COMMIT")
            finally:
                cur.close()

    def close(self) -> None:
        self._stop.set()
        if self._checkpointer.is_alive() and self._checkpointer is not threading.current_thread():
            self._checkpointer.join(5)
        with self._lock:
            self._closed = True
            for conn in self._all:
                conn.close()
            self._all.clear()


def _connect(path: Path) -> sqlite3.Connection:
    # isolation_level=None: transactions are begun and ended here, explicitly.
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    return conn


def _checkpoint_loop(path: Path, stop: threading.Event) -> None:
    conn = _connect(path)
    try:
        while not stop.wait(CHECKPOINT_INTERVAL_S):
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error:
                pass  # busy or briefly locked: the next round catches up
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error:
        pass
    finally:
        conn.close()
