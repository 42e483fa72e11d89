"""Store benchmark (issue 5): throughput of both stores with 32 concurrent writers, and what storing adds
to a streamed request.

Throughput: 32 tasks write real records (a ~100-event response and its items) as fast as the store takes
them, then 32 tasks read them back and fold each to its Response body. Added latency: streamed requests
alternate store: true and store: false against one server; each is timed from sending to the arrival of
its terminal event, which the store must have committed before it goes out. Only same-run ratios are
asserted; the figures are printed.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from accord.adapters.store import PostgresStore, SQLiteStore
from accord.adapters.store._sql import SqlStore
from tests.serving import running, scripted_settings, write_script
from tests.store.pg import PG_ENV, drop_schema, fresh_schema_url
from tests.store.records import run_record, service

WRITERS = 32
PER_WRITER = 40
STREAMS = 150
TARGET_MS = 5.0


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _stores(tmp: Path) -> list[tuple[str, Callable[[], SqlStore], Callable[[], None]]]:
    stores: list[tuple[str, Callable[[], SqlStore], Callable[[], None]]] = [
        ("sqlite", lambda: SQLiteStore(tmp / "bench.db"), lambda: None)
    ]
    base = os.environ.get(PG_ENV)
    if base:
        url, schema = fresh_schema_url(base)
        stores.append(
            ("postgresql", lambda: PostgresStore(url, max_size=WRITERS), lambda: drop_schema(base, schema))
        )
    return stores


async def _save_latency(store: SqlStore, tmp: Path) -> tuple[float, float]:
    """One writer alone: what a save costs a response, from the event loop's side (thread hop included)."""
    record, items, _ = await run_record(service(tmp), {"input": "latency"})
    took: list[float] = []
    for n in range(300):
        started = time.perf_counter()
        await store.save(msgspec.structs.replace(record, id=f"resp_latency_{n}"), items)
        took.append((time.perf_counter() - started) * 1000)
    return statistics.median(took), _p99(took)


async def _throughput(store: SqlStore, tmp: Path) -> tuple[float, float]:
    svc = service(tmp)
    body = {"input": "bench " * 50}
    record, items, _ = await run_record(svc, body)
    ids = [f"resp_bench_{w}_{n}" for w in range(WRITERS) for n in range(PER_WRITER)]

    async def writer(w: int) -> None:
        for n in range(PER_WRITER):
            await store.save(msgspec.structs.replace(record, id=f"resp_bench_{w}_{n}"), items)

    async def reader(w: int) -> None:
        for n in range(PER_WRITER):
            got = await store.get(f"resp_bench_{w}_{n}")
            assert got is not None
            got.snapshot().body()

    rates = []
    for task in (writer, reader):
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for w in range(WRITERS):
                tg.start_soon(task, w)
        rates.append(len(ids) / (time.perf_counter() - started))
    return rates[0], rates[1]


def _stream_latency(base: str, store: bool, client: httpx.Client) -> float:
    started = time.perf_counter()
    body: dict[str, Any] = {"input": "hi", "stream": True, "store": store}
    with client.stream("POST", base + "/v1/responses", json=body) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: ") and '"response.completed"' in line:
                return (time.perf_counter() - started) * 1000
    raise AssertionError("no response.completed")


def _added_latency(tmp: Path, store_url: str | None) -> tuple[float, float, float, float]:
    tmp.mkdir(parents=True, exist_ok=True)
    rules = [{"output": "A short streamed answer of a few chunks.", "chunk_chars": 8}]
    extra = {"store": store_url} if store_url else {}
    settings = scripted_settings(write_script(tmp, rules), **extra)
    stored: list[float] = []
    plain: list[float] = []
    with running(settings) as srv, httpx.Client(timeout=30) as client:
        for _ in range(10):
            _stream_latency(srv.base_url, True, client)
        for _ in range(STREAMS):
            stored.append(_stream_latency(srv.base_url, True, client))
            plain.append(_stream_latency(srv.base_url, False, client))
    return statistics.median(stored), _p99(stored), statistics.median(plain), _p99(plain)


@pytest.mark.benchmark
def test_store_throughput_and_added_latency(tmp_path: Path) -> None:
    lines = [f"\nstore benchmark: {WRITERS} concurrent writers x {PER_WRITER} responses each"]
    for kind, opener, cleanup in _stores(tmp_path):
        store = opener()
        try:
            writes, reads = anyio.run(_throughput, store, tmp_path)
            save50, save99 = anyio.run(_save_latency, store, tmp_path)
        finally:
            store.close()
            cleanup()
        lines.append(
            f"  {kind:<10} writes {writes:8,.0f}/s   reads (get + fold) {reads:8,.0f}/s   "
            f"one save alone: p50 {save50:.2f} ms p99 {save99:.2f} ms"
        )
        assert reads > 0 and writes > 0

    latency_targets: list[tuple[str, str | None]] = [("sqlite", None)]
    base = os.environ.get(PG_ENV)
    schema = None
    if base:
        url, schema = fresh_schema_url(base)
        latency_targets.append(("postgresql", url))
    try:
        for kind, target in latency_targets:
            s50, s99, p50, p99 = _added_latency(tmp_path / kind, target)
            added = s99 - p99
            verdict = "met" if added < TARGET_MS else "NOT met"
            lines.append(
                f"  {kind:<10} streamed, to the terminal event: store:true p50 {s50:.2f} ms p99 {s99:.2f} ms; "
                f"store:false p50 {p50:.2f} ms p99 {p99:.2f} ms; added at p99 {added:+.2f} ms "
                f"(target < {TARGET_MS:.0f} ms: {verdict})"
            )
            # Same-run ratio only: storing must not multiply the time to the end of a stream.
            assert s50 < 3 * p50 + TARGET_MS
    finally:
        if base and schema:
            drop_schema(base, schema)
    print("\n".join(lines))
