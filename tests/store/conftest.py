from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

PG_ENV = "ACCORD_TEST_POSTGRES"


def postgres_url() -> str | None:
    return os.environ.get(PG_ENV) or None


def fresh_schema_url(base: str) -> tuple[str, str]:
    """A URL whose connections work in a new, empty schema (one per test, no cross-talk)."""
    import psycopg

    schema = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options={quote(f'-csearch_path={schema}')}", schema


def drop_schema(base: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL URL on a schema of its own; skips where the CI server is not configured."""
    base = postgres_url()
    if base is None:
        pytest.skip(f"{PG_ENV} is not set (CI starts PostgreSQL with .ci/postgres.sh)")
    url, schema = fresh_schema_url(base)
    try:
        yield url
    finally:
        drop_schema(base, schema)


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
