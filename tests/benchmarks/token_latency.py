"""What the front-of-upstream benchmarks share: servers as subprocesses, token arrival times, rounds.

Each benchmark reads the same stream two ways, straight from an upstream and through an
``accord serve`` process in front of it, the paths taking turns so that both see the same
machine. A path keeps, per number of concurrent streams, the time to its first token event
and every gap between token events.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx

from accord.engine.upstream import SSEDecoder

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def serving(
    args: list[str], health: str, *, timeout: float, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``args`` run from the repository root until the block ends, once ``health`` answers 200;
    yields the process. ``env``: variables set for it on top of this process's."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(health, timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"{args} exited with {proc.returncode}")
            time.sleep(0.05)  # polling another process's port: there is no event to wait on
        else:
            raise RuntimeError(f"{args} did not answer {health} within {timeout} s")
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def peak_rss_mib(pid: int) -> float:
    """The highest resident memory process ``pid`` has had so far (VmHWM), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def token_times(
    client: httpx.AsyncClient, url: str, body: dict[str, object], marker: bytes
) -> list[float]:
    """Arrival times of the stream's token events (payloads holding ``marker``), the request's start first."""
    times = [time.perf_counter()]
    decoder = SSEDecoder()
    async with client.stream("POST", url, json=body) as response:
        assert response.status_code == 200
        async for data in response.aiter_raw():
            now = time.perf_counter()
            for payload in decoder.feed(data):
                if marker in payload:
                    times.append(now)
    return times


class LatencyPath:
    """One way to the same stream, and what was measured on it, keyed by concurrent streams."""

    def __init__(self, url: str, body: dict[str, object], marker: bytes) -> None:
        self.url, self.body, self.marker = url, body, marker
        self.ttft: dict[int, list[float]] = {}
        self.gaps: dict[int, list[float]] = {}
        self.events: dict[int, int] = {}


def bench_client(streams: int, timeout: float) -> httpx.AsyncClient:
    """The benchmarks' client: a new connection for every request, on every path alike.

    llama-server (cpp-httplib) drops a reused keep-alive connection without answering now and
    then: "Server disconnected without sending a response" in 2 of 18 rounds of 1/8/16 streams
    here, 0 of 30 with a connection per request. A new local connection costs well under a
    millisecond, against streams of seconds.
    """
    limits = httpx.Limits(max_connections=2 * streams, max_keepalive_connections=0)
    return httpx.AsyncClient(timeout=timeout, limits=limits)


async def read_rounds(
    paths: list[LatencyPath], *, streams: int, rounds: int, request_timeout: float, tokens: int | None = None
) -> None:
    """``rounds`` rounds of ``streams`` concurrent streams on each path in turn, after one warm-up each.

    ``tokens``: how many token events every stream must carry (None: at least one).
    """
    async with bench_client(streams, request_timeout) as client:
        for path in paths:  # warm: connections, first-request work, the upstream's first probe
            await token_times(client, path.url, path.body, path.marker)
        for _ in range(rounds):
            for path in paths:
                runs: list[list[float]] = []

                async def one(path: LatencyPath = path, runs: list[list[float]] = runs) -> None:
                    runs.append(await token_times(client, path.url, path.body, path.marker))

                async with anyio.create_task_group() as tg:
                    for _ in range(streams):
                        tg.start_soon(one)
                for times in runs:
                    if tokens is None:
                        assert len(times) > 1, "a stream carried no tokens"
                    else:
                        assert len(times) == tokens + 1, "a stream lost tokens"
                    path.ttft.setdefault(streams, []).append(times[1] - times[0])
                    path.gaps.setdefault(streams, []).extend(b - a for a, b in itertools.pairwise(times[1:]))
                    path.events[streams] = path.events.get(streams, 0) + len(times) - 1
