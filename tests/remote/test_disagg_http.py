"""``accord serve`` with prefill/decode pools, seen by a client (SPEC E5, W6-W9, W12).

The context phase is slow by configuration (seconds here; one slow test runs the real
30 s): the client must have its stream open at once, receive numbered keepalives while
the prefill runs, and never see a byte of the KV handoff.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from accord.config import Settings
from tests.oracle import check_stream
from tests.remote.conftest import Fleet
from tests.remote.fake_vllm import INTERNAL_HOST
from tests.serving import Server, parse_sse, running

REPLY = "Hello from the upstream, how are you?"
#: Anything of the handoff a client could be shown by mistake.
LEAKS = (b"kv_transfer", b"do_remote", b"remote_", b"engine-p", INTERNAL_HOST.encode(), b"5600", b"tp_size")


def _settings(split: Fleet, tmp: Path, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "engine": "remote",
        "chat_template": "plain",
        "prefill_upstream": split.urls[:2],
        "decode_upstream": split.urls[2:],
        "data_dir": tmp / "data",
        "reasoning_parser": "none",
        "tool_parser": "none",
        "keepalive_interval": 0.25,
        "shutdown_grace": 1.0,
    }
    values.update(extra)
    return Settings(**values)


@pytest.fixture
def server(split: Fleet, tmp_path: Path, worker_class: str) -> Iterator[Server]:
    with running(_settings(split, tmp_path, worker_class=worker_class)) as srv:
        yield srv


@pytest.fixture(params=["asyncio", "trio"])
def worker_class(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _stream(server: Server, body: dict[str, Any]) -> tuple[bytes, list[dict[str, Any]]]:
    raw = httpx.post(server.v1 + "/responses", json={**body, "stream": True}, timeout=60).content
    return raw, parse_sse(raw)


def test_the_stream_is_kept_alive_while_the_prefill_runs(split: Fleet, server: Server) -> None:
    """SPEC W8/W9: created + in_progress at once, then in_progress repeated, numbered, until tokens come."""
    for fake in split.fakes[:2]:
        fake.behaviour.first_token_delay = 2.0
    raw, events = _stream(server, {"model": "m", "input": "hello", "prompt_cache_key": "thread-1"})
    check_stream(events)
    types = [e["type"] for e in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    keepalives = [e for e in events[2:] if e["type"] == "response.in_progress"]
    assert len(keepalives) >= 5
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert all(e["response"] == events[1]["response"] for e in keepalives)
    assert types.index("response.output_item.added") > 2 + len(keepalives) - 1
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == REPLY
    assert not any(leak in raw for leak in LEAKS)


def test_no_transfer_field_reaches_a_client_anywhere(split: Fleet, server: Server) -> None:
    """The handoff names internal hosts and block ids: not in the stream, the body, usage or models."""
    raw_stream, _ = _stream(server, {"model": "m", "input": "hello"})
    with httpx.Client(timeout=30) as client:
        plain = client.post(server.v1 + "/responses", json={"model": "m", "input": "hello"})
        models = client.get(server.v1 + "/models")
        completion = client.post(
            server.v1 + "/completions", json={"model": "m", "prompt": "hi", "max_tokens": 5}
        )
        streamed = client.post(
            server.v1 + "/completions", json={"model": "m", "prompt": "hi", "stream": True}
        )
    for raw in (raw_stream, plain.content, models.content, completion.content, streamed.content):
        assert not any(leak in raw for leak in LEAKS), raw
    assert plain.status_code == models.status_code == completion.status_code == 200
    assert [m["id"] for m in models.json()["data"]] == ["fake-model"]
    assert split.fakes[0].registry.pulled and all(p["ok"] for p in split.fakes[0].registry.pulled)


def test_usage_reports_the_context_phases_cache_hits(split: Fleet, server: Server) -> None:
    """SPEC W12: cached_tokens as the prefill measured it, not the decode's "everything arrived"."""
    with openai.OpenAI(base_url=server.v1, api_key="x", max_retries=0) as client:
        first = client.responses.create(
            model="m", input="what is the capital of France", prompt_cache_key="t"
        )
        second = client.responses.create(
            model="m",
            input=[
                {"role": "user", "content": "what is the capital of France"},
                {"role": "assistant", "content": first.output_text},
                {"role": "user", "content": "and of Italy?"},
            ],
            prompt_cache_key="t",
        )
    assert first.usage is not None and second.usage is not None
    assert first.usage.input_tokens_details.cached_tokens == 0
    assert 0 < second.usage.input_tokens_details.cached_tokens < second.usage.input_tokens


def test_an_over_length_prefill_fails_the_open_stream_with_its_code(split: Fleet, server: Server) -> None:
    """SPEC W7: created, in_progress, error, response.failed (0-3), the upstream's words, clean end."""
    for fake in split.fakes[:2]:
        fake.behaviour.max_model_len = 8
    _raw, events = _stream(server, {"model": "m", "input": "a prompt that will not fit in eight tokens"})
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "error",
        "response.failed",
    ]
    assert [e["sequence_number"] for e in events] == [0, 1, 2, 3]
    error, failed = events[2], events[3]
    assert error["code"] == failed["response"]["error"]["code"] == "context_length_exceeded"
    assert "maximum model length of 8" in error["message"]
    assert split.fakes[2].seen == [] and split.fakes[3].seen == []
    plain = httpx.post(server.v1 + "/responses", json={"model": "m", "input": "a prompt that will not fit"})
    assert plain.status_code == 400 and plain.json()["error"]["code"] == "context_length_exceeded"


def test_models_answer_503_when_no_context_worker_is_up(split: Fleet, tmp_path: Path) -> None:
    settings = _settings(split, tmp_path, prefill_upstream=["http://127.0.0.1:9"])
    with running(settings) as srv:
        answer = httpx.get(srv.v1 + "/models")
        assert answer.status_code == 503 and answer.json()["error"]["code"] == "upstream_unavailable"
        _raw, events = _stream(srv, {"model": "m", "input": "hello"})
        assert events[-1]["type"] == "response.failed"
        assert events[-1]["response"]["error"]["code"] == "upstream_error"


@pytest.mark.slow
def test_a_thirty_second_prefill_keeps_the_client_alive_throughout(split: Fleet, tmp_path: Path) -> None:
    """The issue's own case at its real length, with a realistic keepalive interval."""
    for fake in split.fakes[:2]:
        fake.behaviour.first_token_delay = 30.0
    with running(_settings(split, tmp_path, keepalive_interval=4.0)) as srv:
        gaps: list[float] = []
        events: list[dict[str, Any]] = []
        with httpx.stream(
            "POST", srv.v1 + "/responses", json={"model": "m", "input": "hi", "stream": True}, timeout=60
        ) as response:
            import time

            last = time.monotonic()
            for block in response.iter_raw():
                now = time.monotonic()
                gaps.append(now - last)
                last = now
                events.extend(parse_sse(block))
        assert max(gaps) < 6.0  # never silent much past one interval
        keepalives = [e for e in events[2:] if e["type"] == "response.in_progress"]
        assert len(keepalives) >= 6
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        assert events[-1]["type"] == "response.completed"
