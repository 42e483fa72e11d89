"""Serving benchmark (issue 2): 64 concurrent streams against one hypercorn process.

Scripted engine, 20 chunks each, 5 ms apart. Prints throughput and the p50/p99 gap
between consecutive events as clients see them. The only assertion is a same-run
ratio: the p99 gap stays within a small multiple of the engine's own 5 ms pacing.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import anyio
import httpx
import pytest

from tests.serving import running, scripted_settings, write_script

STREAMS = 64
CHUNKS = 20


@pytest.mark.benchmark
@pytest.mark.parametrize("worker_class", ["asyncio", "trio"])
def test_sixty_four_concurrent_streams(tmp_path: Path, worker_class: str) -> None:
    rules = [{"output": "x" * (CHUNKS * 4), "chunk_chars": 4, "chunk_delay_s": 0.005}]
    settings = scripted_settings(write_script(tmp_path, rules), worker_class=worker_class)
    gaps: list[float] = []
    events = 0

    async def one(client: httpx.AsyncClient) -> None:
        nonlocal events
        async with client.stream("POST", "/v1/responses", json={"input": "go", "stream": True}) as resp:
            last = None
            async for line in resp.aiter_lines():
                if not line.startswith("data: "):
                    continue
                now = time.perf_counter()
                if last is not None:
                    gaps.append(now - last)
                last = now
                events += 1

    async def main(base: str) -> float:
        limits = httpx.Limits(max_connections=STREAMS)
        async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:
            t0 = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for _ in range(STREAMS):
                    tg.start_soon(one, client)
            return time.perf_counter() - t0

    with running(settings) as srv:
        wall = anyio.run(main, srv.base_url)
    gaps.sort()
    p50 = statistics.median(gaps) * 1000
    p99 = gaps[int(len(gaps) * 0.99)] * 1000
    print(
        f"\nserving ({worker_class}): {STREAMS} streams x {CHUNKS} chunks, {events} events in {wall:.2f} s "
        f"= {events / wall:,.0f} events/s; gap p50 {p50:.1f} ms, p99 {p99:.1f} ms (target p99 < 50 ms)"
    )
    assert events >= STREAMS * (CHUNKS + 5)
    assert p99 < 20 * 5.0, "p99 gap is more than 20x the engine's own pacing"
