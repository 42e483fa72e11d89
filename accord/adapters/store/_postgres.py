"""The shared store: PostgreSQL through psycopg 3 and its connection pool (SPEC S3).

Several accord processes (or machines) behind one load balancer share it; a response is
visible to all of them once its transaction has committed, which happens before its
terminal event is sent. Migrations run at start under an advisory lock, so processes
starting together apply each one once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psycopg_pool import ConnectionPool

from accord.adapters.store._protocol import Cursor
from accord.adapters.store._sql import SqlStore

#: Any constant: serialises schema migrations between processes.
_MIGRATION_LOCK = 0x61636F7264


class PostgresStore(SqlStore):
    kind = "postgresql"
    placeholder = "%s"

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 16, timeout: float = 30.0) -> None:
        self._pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True},
            timeout=timeout,
            open=True,
            name="accord-store",
        )
        try:
            self._pool.wait(timeout=timeout)
            with self.transaction(write=True) as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                self.migrate(cur, "BYTEA")
        except BaseException:
            self._pool.close()
            raise

    @contextmanager
    def transaction(self, *, write: bool, batch: bool = False) -> Iterator[Cursor]:
        del write  # every transaction is read-committed; writes are single upserts
        with self._pool.connection() as conn:
            if batch:
                # Pipeline mode: the whole write, commit included, costs one round trip
                # instead of one per statement; this is most of what storing adds to a stream.
                with conn.pipeline(), conn.transaction(), conn.cursor() as cur:
                    yield cur
            else:
                with conn.transaction(), conn.cursor() as cur:
                    yield cur

    def close(self) -> None:
        self._pool.close()


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))
