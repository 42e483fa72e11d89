from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store.pg import PG_ENV, drop_schema, fresh_schema_url, postgres_url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """``--store`` values for both stores (PostgreSQL skips without a server)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    base = postgres_url()
    if base is None:
        pytest.skip(f"{PG_ENV} is not set (CI starts PostgreSQL with .ci/postgres.sh)")
    url, schema = fresh_schema_url(base)
    try:
        yield url
    finally:
        drop_schema(base, schema)


@pytest.fixture(params=["asyncio", "trio"])
def worker_class(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
