"""Serving p99 per projection (issue 14 benchmark): Responses, Chat Completions and Messages,
64 concurrent streams each, against one hypercorn process in the same run.

Scripted engine, 20 chunks each, 5 ms apart, as the serving benchmark. Each protocol gets
the same load in turn, twice, in alternating order (the machine is shared, so a burst of
noise should not land on one protocol only); the figures are over both rounds. Prints
events/s and the p50/p99 gap between consecutive ``data:`` lines as clients see them; the
only assertion is a loose same-run ratio (6x, for a shared machine) of each projection's p99 to Responses' (the issue's
target is within 10%).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.serving import running, scripted_settings, write_script

STREAMS = 64
CHUNKS = 20
BODIES: dict[str, tuple[str, dict[str, Any]]] = {
    "responses": ("/v1/responses", {"input": "go", "stream": True}),
    "chat": (
        "/v1/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": "go"}], "stream": True},
    ),
    "messages": (
        "/v1/messages",
        {"model": "m", "max_tokens": 500, "messages": [{"role": "user", "content": "go"}], "stream": True},
    ),
}


def _p(sorted_gaps: list[float], q: float) -> float:
    return sorted_gaps[min(len(sorted_gaps) - 1, int(len(sorted_gaps) * q))] * 1000


@pytest.mark.benchmark
@pytest.mark.parametrize("worker_class", ["asyncio", "trio"])
def test_p99_per_projection(tmp_path: Path, worker_class: str) -> None:
    rules = [{"output": "x" * (CHUNKS * 4), "chunk_chars": 4, "chunk_delay_s": 0.005}]
    settings = scripted_settings(write_script(tmp_path, rules), worker_class=worker_class, store="none")
    gaps: dict[str, list[float]] = {name: [] for name in BODIES}
    events: dict[str, int] = dict.fromkeys(BODIES, 0)
    walls: dict[str, float] = dict.fromkeys(BODIES, 0.0)

    async def one(client: httpx.AsyncClient, name: str, keep: bool) -> None:
        path, body = BODIES[name]
        async with client.stream("POST", path, json=body) as resp:
            assert resp.status_code == 200
            last = None
            async for line in resp.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                now = time.perf_counter()
                if keep:
                    if last is not None:
                        gaps[name].append(now - last)
                    events[name] += 1
                last = now

    async def load(base: str, name: str, streams: int, keep: bool) -> None:
        limits = httpx.Limits(max_connections=streams)
        async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:
            t0 = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for _ in range(streams):
                    tg.start_soon(one, client, name, keep)
            if keep:
                walls[name] += time.perf_counter() - t0

    with running(settings) as srv:
        for name in BODIES:  # warm each route's code paths and connections
            anyio.run(load, srv.base_url, name, 4, False)
        for order in (list(BODIES), list(reversed(BODIES))):
            for name in order:
                anyio.run(load, srv.base_url, name, STREAMS, True)

    figures = {}
    for name in BODIES:
        ordered = sorted(gaps[name])
        figures[name] = (_p(ordered, 0.99), statistics.median(ordered) * 1000)
        print(
            f"\nserving {name} ({worker_class}): 2 x {STREAMS} streams x {CHUNKS} chunks, "
            f"{events[name]} events in {walls[name]:.2f} s = {events[name] / walls[name]:,.0f} events/s; "
            f"gap p50 {figures[name][1]:.1f} ms, p99 {figures[name][0]:.1f} ms"
        )
    base = max(figures["responses"][0], 5.0)
    for name in ("chat", "messages"):
        print(f"{name} p99 / responses p99 = {figures[name][0] / figures['responses'][0]:.2f}")
        assert events[name] >= 2 * STREAMS * CHUNKS
        assert figures[name][0] < 6 * base, f"{name} p99 is 6x past Responses' in the same run"
