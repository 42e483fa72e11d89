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

import statistics
import sys
from pathlib import Path

import anyio
import pytest

from tests.benchmarks.token_latency import LatencyPath, percentile, read_rounds, serving
from tests.serving import free_port

STREAMS = 32
ROUNDS = 3
TOKENS = 64
FIRST_TOKEN_DELAY = 0.05
TOKEN_DELAY = 0.02


async def _read(paths: list[LatencyPath]) -> None:
    await read_rounds(paths, streams=STREAMS, rounds=ROUNDS, request_timeout=60, tokens=TOKENS)


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
    with serving(fake, upstream + "/v1/models", timeout=30), serving(serve, front + "/health", timeout=30):
        direct_body = {"model": "fake-model", "prompt": "<|im_start|>user\nhi<|im_end|>\n", "stream": True}
        direct_body["max_tokens"] = TOKENS
        through_body = {"model": "fake-model", "input": "hi", "stream": True, "max_output_tokens": TOKENS}
        direct = LatencyPath(upstream + "/v1/completions", direct_body, b'"text": "')
        through = LatencyPath(front + "/v1/responses", through_body, b'"response.output_text.delta"')
        anyio.run(_read, [direct, through])

    rows = []
    for name, (d, t) in {
        "TTFT": (direct.ttft[STREAMS], through.ttft[STREAMS]),
        "inter-token gap": (direct.gaps[STREAMS], through.gaps[STREAMS]),
    }.items():
        for q in (0.5, 0.99):
            dq, tq = percentile(d, q) * 1000, percentile(t, q) * 1000
            rows.append(
                f"  {name:<16} p{int(q * 100):<3} direct {dq:8.2f} ms   accord {tq:8.2f} ms   added {tq - dq:+7.2f} ms"
            )
    print(
        f"\nremote engine overhead: {STREAMS} concurrent streams x {ROUNDS} rounds, {TOKENS} tokens each, "
        f"upstream pace {FIRST_TOKEN_DELAY * 1000:.0f} ms to first token, {TOKEN_DELAY * 1000:.0f} ms per token\n"
        + "\n".join(rows)
        + f"\n  events measured: {len(direct.gaps[STREAMS])} gaps on each path (target: < 5 ms added at p99)"
    )
    # Same-run relations only: accord delivered every token, at the upstream's own pace.
    assert len(through.gaps[STREAMS]) == len(direct.gaps[STREAMS])
    assert statistics.median(through.gaps[STREAMS]) < 2 * statistics.median(direct.gaps[STREAMS])
