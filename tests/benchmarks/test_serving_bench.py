"""Serving benchmark (issue 2): 64 concurrent streams against one hypercorn process.

Scripted engine, 20 chunks each, 5 ms apart. Prints throughput and the p50/p99 gap
between consecutive events as clients see them. The only assertion is a same-run
ratio: the p99 gap at 64 streams against the run's own round (the time every stream takes, on
average, to get its next event).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import anyio
import httpx
import pytest

from tests.serving import read_gaps, running, scripted_settings, write_script

STREAMS = 64
CHUNKS = 20


@pytest.mark.benchmark
@pytest.mark.parametrize("worker_class", ["asyncio", "trio"])
@pytest.mark.parametrize("store", ["none", "sqlite"])  # sqlite: the default file in the data dir
def test_sixty_four_concurrent_streams(tmp_path: Path, worker_class: str, store: str) -> None:
    rules = [{"output": "x" * (CHUNKS * 4), "chunk_chars": 4, "chunk_delay_s": 0.005}]
    extra = {"store": "none"} if store == "none" else {}
    settings = scripted_settings(write_script(tmp_path, rules), worker_class=worker_class, **extra)
    gaps: list[float] = []
    events = 0
    runs: dict[int, tuple[list[float], int, float]] = {}

    async def one(client: httpx.AsyncClient) -> None:
        nonlocal events
        count = await read_gaps(client, gaps)  # read before adding: the streams run concurrently
        events += count

    async def main(base: str, streams: int) -> None:
        nonlocal gaps, events
        gaps, events = [], 0
        limits = httpx.Limits(max_connections=streams)
        async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:
            t0 = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for _ in range(streams):
                    tg.start_soon(one, client)
            runs[streams] = (sorted(gaps), events, time.perf_counter() - t0)

    with running(settings) as srv:
        for streams in (1, 1, STREAMS):  # the first single stream warms up connections and code paths
            anyio.run(main, srv.base_url, streams)

    def p(sorted_gaps: list[float], q: float) -> float:
        return sorted_gaps[min(len(sorted_gaps) - 1, int(len(sorted_gaps) * q))] * 1000

    single, _, _ = runs[1]
    many, count, wall = runs[STREAMS]
    print(
        f"\nserving ({worker_class}, store {store}): {STREAMS} streams x {CHUNKS} chunks, {count} events in {wall:.2f} s "
        f"= {count / wall:,.0f} events/s; gap p50 {statistics.median(many) * 1000:.1f} ms, "
        f"p99 {p(many, 0.99):.1f} ms (target p99 < 50 ms); one stream alone: p99 {p(single, 0.99):.1f} ms"
    )
    # Fairness, in this run's own terms: a round is the time every stream takes, on average, to get
    # one more event; no stream's p99 gap may exceed 20 rounds (measured 2.2-9.6 over 16 runs; a stream
    # starved until the others finish would wait the whole run, about 28). The p99 against one stream
    # alone (asserted before, 40x) measured 7-48x between runs of the same code: it mostly measures load.
    round_ms = wall * 1000 / (count / STREAMS)
    print(f"  round {round_ms:.1f} ms; p99 gap = {p(many, 0.99) / round_ms:.1f} rounds (asserted < 20)")
    assert count >= STREAMS * (CHUNKS + 5)
    assert p(many, 0.99) < 20 * round_ms, "a stream waited more than 20 rounds for its next event"
