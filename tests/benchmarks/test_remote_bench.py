"""What accord adds in front of an upstream (issue 7 benchmark): TTFT and inter-token gaps.

A fake vLLM server (its own process) streams a fixed number of tokens at a fixed pace.
32 concurrent clients read it twice: directly (``/v1/completions``) and through an
``accord serve --engine remote`` process in front of it (``/v1/responses``, streamed).
For each path: time to the first token event (the first ``output_text.delta`` through
accord) and every gap between token events, p50 and p99. The difference between the
two paths, measured in the same run on the same machine, is accord's cost per event.
Prints the figures; asserts only same-run relations (machines are noisy).
"""

from __future__ import annotations

import itertools
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from accord.engine.upstream import SSEDecoder
from tests.serving import free_port

STREAMS = 32
ROUNDS = 3
TOKENS = 64
FIRST_TOKEN_DELAY = 0.05
TOKEN_DELAY = 0.02
ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def _process(args: list[str], health: str) -> Iterator[None]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                if httpx.get(health, timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"{args} exited with {proc.returncode}")
            time.sleep(0.05)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _one(client: httpx.AsyncClient, url: str, body: dict[str, object], marker: bytes) -> list[float]:
    """Arrival times of token events, the request's start first."""
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


class _Path:
    def __init__(self, url: str, body: dict[str, object], marker: bytes) -> None:
        self.url, self.body, self.marker = url, body, marker
        self.ttft: list[float] = []
        self.gaps: list[float] = []


async def _rounds(paths: list[_Path]) -> None:
    """Rounds of STREAMS concurrent streams, the paths taking turns so both see the same machine."""
    limits = httpx.Limits(max_connections=STREAMS * 2, max_keepalive_connections=STREAMS * 2)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        for path in paths:  # warm: connections, first-request work, the upstream's first probe
            await _one(client, path.url, path.body, path.marker)
        for _ in range(ROUNDS):
            for path in paths:
                runs: list[list[float]] = []

                async def one(path: _Path = path, runs: list[list[float]] = runs) -> None:
                    runs.append(await _one(client, path.url, path.body, path.marker))

                async with anyio.create_task_group() as tg:
                    for _ in range(STREAMS):
                        tg.start_soon(one)
                for times in runs:
                    assert len(times) == TOKENS + 1, "a stream lost tokens"
                    path.ttft.append(times[1] - times[0])
                    path.gaps.extend(b - a for a, b in itertools.pairwise(times[1:]))


@pytest.mark.benchmark
def test_accord_adds_little_to_an_upstreams_latency(tmp_path: Path) -> None:
    up_port, accord_port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{up_port}"
    front = f"http://127.0.0.1:{accord_port}"
    fake = [sys.executable, "-m", "tests.remote.fake_vllm", "--port", str(up_port), "--tokens", str(TOKENS)]
    fake += ["--first-token-delay", str(FIRST_TOKEN_DELAY), "--token-delay", str(TOKEN_DELAY)]
    serve = [sys.executable, "-m", "accord.cli", "serve", "--engine", "remote", "--upstream", upstream]
    serve += ["--port", str(accord_port), "--data-dir", str(tmp_path), "--log-format", "json"]
    serve += ["--reasoning-parser", "none", "--tool-parser", "none", "--chat-template", "plain"]
    with _process(fake, upstream + "/v1/models"), _process(serve, front + "/health"):
        direct_body = {"model": "fake-model", "prompt": "<|im_start|>user\nhi<|im_end|>\n", "stream": True}
        direct_body["max_tokens"] = TOKENS
        through_body = {"model": "fake-model", "input": "hi", "stream": True, "max_output_tokens": TOKENS}
        direct = _Path(upstream + "/v1/completions", direct_body, b'"text": "')
        through = _Path(front + "/v1/responses", through_body, b'"response.output_text.delta"')
        anyio.run(_rounds, [direct, through])

    rows = []
    for name, (d, t) in {
        "TTFT": (direct.ttft, through.ttft),
        "inter-token gap": (direct.gaps, through.gaps),
    }.items():
        for q in (0.5, 0.99):
            dq, tq = _pct(d, q) * 1000, _pct(t, q) * 1000
            rows.append(
                f"  {name:<16} p{int(q * 100):<3} direct {dq:8.2f} ms   accord {tq:8.2f} ms   added {tq - dq:+7.2f} ms"
            )
    print(
        f"\nremote engine overhead: {STREAMS} concurrent streams x {ROUNDS} rounds, {TOKENS} tokens each, "
        f"upstream pace {FIRST_TOKEN_DELAY * 1000:.0f} ms to first token, {TOKEN_DELAY * 1000:.0f} ms per token\n"
        + "\n".join(rows)
        + f"\n  events measured: {len(direct.gaps)} gaps on each path (target: < 5 ms added at p99)"
    )
    # Same-run relations only: accord delivered every token, at the upstream's own pace.
    assert len(through.gaps) == len(direct.gaps)
    assert statistics.median(through.gaps) < 2 * statistics.median(direct.gaps)
