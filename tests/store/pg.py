"""A throw-away schema per test on the CI PostgreSQL server (``ACCORD_TEST_POSTGRES``)."""

from __future__ import annotations

import os
import secrets
from urllib.parse import quote

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
