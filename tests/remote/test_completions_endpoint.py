"""``/v1/completions`` on accord: vLLM's shapes, errors, cancellation, and accord fronting accord."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from accord.adapters.build import build_app
from accord.config import Settings
from accord.engine.protocol import EngineCapabilities, GenerationRequest
from accord.engine.scripted import ScriptedEngine
from accord.events.generation import Chunk, GenerationOutput
from tests.oracle import check_stream
from tests.remote.harness import wait_until
from tests.serving import Server, parse_sse, running, scripted_settings, write_script

ANSWER = "Hello there, how can I help you today?"
RULES: list[dict[str, Any]] = [
    {
        "when": {"last_input": "^fail"},
        "output": "partial answer",
        "chunk_chars": 3,
        "fail": {"after_chunks": 2},
    },
    {"when": {"last_input": "endless"}, "output": "tick " * 400, "chunk_chars": 5, "chunk_delay_s": 0.02},
    {"output": ANSWER, "chunk_chars": 5, "cached_tokens": 2},
]


@pytest.fixture(scope="module")
def inner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A scripted accord; the scripted engine picks its rule by the prompt's text here."""
    script = write_script(tmp_path_factory.mktemp("inner"), RULES)
    with running(scripted_settings(script, max_context=60)) as srv:
        yield srv


def _sse_data(raw: bytes) -> list[Any]:
    blocks = [b for b in raw.decode().split("\n\n") if b.strip()]
    assert all(b.startswith("data: ") and "\n" not in b for b in blocks), blocks
    return [b[len("data: ") :] if b == "data: [DONE]" else json.loads(b[len("data: ") :]) for b in blocks]


def test_a_whole_completion_has_vllms_shape_and_usage(inner: Server) -> None:
    body = {"model": "m", "prompt": "hi", "max_tokens": 100, "return_token_ids": True}
    answer = httpx.post(inner.v1 + "/completions", json=body).json()
    assert answer["object"] == "text_completion" and answer["id"].startswith("cmpl-")
    assert answer["model"] == "m"
    (choice,) = answer["choices"]
    assert (choice["text"], choice["finish_reason"], choice["index"]) == (ANSWER, "stop", 0)
    usage = answer["usage"]
    assert usage["completion_tokens"] == len(choice["token_ids"]) > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["prompt_tokens_details"] == {"cached_tokens": 2}


def test_a_streamed_completion_is_data_frames_then_done(inner: Server) -> None:
    body = {"prompt": "hi", "max_tokens": 100, "stream": True, "return_token_ids": True}
    frames = _sse_data(
        httpx.post(
            inner.v1 + "/completions", json={**body, "stream_options": {"include_usage": True}}
        ).content
    )
    assert frames[-1] == "[DONE]"
    chunks, usage = frames[:-2], frames[-2]
    assert "".join(c["choices"][0]["text"] for c in chunks) == ANSWER
    assert len({c["id"] for c in frames[:-1]}) == 1
    assert [c["choices"][0]["finish_reason"] for c in chunks][-1] == "stop"
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == sum(
        len(c["choices"][0]["token_ids"]) for c in chunks
    )
    without = _sse_data(httpx.post(inner.v1 + "/completions", json=body).content)
    assert all(f == "[DONE]" or f["choices"] for f in without)  # no usage chunk unless asked


def test_the_openai_sdk_reads_both_forms(inner: Server) -> None:
    with openai.OpenAI(base_url=inner.v1, api_key="x", max_retries=0) as client:
        whole = client.completions.create(model="m", prompt="hi", max_tokens=100)
        streamed = "".join(
            c.choices[0].text
            for c in client.completions.create(model="m", prompt="hi", max_tokens=100, stream=True)
        )
    assert whole.choices[0].text == streamed == ANSWER


def test_max_tokens_defaults_to_sixteen_as_in_the_openai_api(inner: Server) -> None:
    answer = httpx.post(inner.v1 + "/completions", json={"prompt": "hi"}).json()
    assert answer["choices"][0]["finish_reason"] == "length" and answer["usage"]["completion_tokens"] == 16
    answer = httpx.post(inner.v1 + "/completions", json={"prompt": "hi", "max_tokens": None}).json()
    assert answer["choices"][0]["finish_reason"] == "stop"  # null: no cap short of the context
    assert answer["usage"]["completion_tokens"] == 22


@pytest.mark.parametrize("stream", [False, True])
def test_an_over_length_prompt_is_a_400_with_code_context_length_exceeded(
    inner: Server, stream: bool
) -> None:
    answer = httpx.post(inner.v1 + "/completions", json={"prompt": "word " * 80, "stream": stream})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "context_length_exceeded" and error["type"] == "invalid_request_error"
    assert error["message"].startswith("This model's maximum context length is 60 tokens.")


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"prompt": "hi", "n": 2}, "n"),
        ({"prompt": "hi", "echo": True}, "echo"),
        ({"prompt": "hi", "logprobs": 1}, "logprobs"),
        ({"prompt": ["one", "two"]}, "prompt"),
        ({"prompt": [1, 2, 3]}, "prompt"),  # the scripted engine has no tokenizer
        ({"prompt": ""}, "prompt"),
        ({"prompt": "hi", "max_tokens": "many"}, "max_tokens"),
    ],
)
def test_requests_it_cannot_serve_are_clean_400s(inner: Server, body: dict[str, Any], param: str) -> None:
    answer = httpx.post(inner.v1 + "/completions", json=body)
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == param


def test_a_failure_after_the_first_chunk_is_an_error_event_then_done(inner: Server) -> None:
    answer = httpx.post(
        inner.v1 + "/completions", json={"prompt": "fail now", "stream": True, "max_tokens": 50}
    )
    frames = _sse_data(answer.content)
    assert answer.status_code == 200 and frames[-1] == "[DONE]"
    assert "".join(f["choices"][0]["text"] for f in frames[:-2]) == "partia"
    assert frames[-2]["error"]["code"] == "engine_error"


def test_a_client_that_goes_away_stops_the_engine(inner: Server) -> None:
    engine = inner.app.service.engine
    assert isinstance(engine, ScriptedEngine)
    before = engine.cancelled
    body = {"prompt": "endless", "stream": True, "max_tokens": None}
    with httpx.stream("POST", inner.v1 + "/completions", json=body) as response:
        for n, _ in enumerate(response.iter_lines()):
            if n == 4:
                break
    assert wait_until(lambda: engine.cancelled > before)


# -- accord in front of accord -----------------------------------------------------------------


@pytest.fixture(scope="module")
def outer(inner: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    settings = Settings(
        engine="remote",
        upstream=[inner.base_url],
        chat_template="plain",
        data_dir=tmp_path_factory.mktemp("outer"),
        reasoning_parser="none",
        tool_parser="none",
        shutdown_grace=1.0,
    )
    with running(settings) as srv:
        yield srv


def _response(server: Server, stream: bool, text: str = "hi") -> dict[str, Any]:
    body = {"model": "m", "input": text, "stream": stream, "max_output_tokens": 200}
    answer = httpx.post(server.v1 + "/responses", json=body, timeout=30)
    if not stream:
        return dict(answer.json())
    events = parse_sse(answer.content)
    check_stream(events)
    return dict(events[-1]["response"])


@pytest.mark.parametrize("stream", [False, True])
def test_a_response_through_a_remote_engine_equals_the_upstream_served_directly(
    inner: Server, outer: Server, stream: bool
) -> None:
    """The same prompt, rendered once here and generated there: same output and the same usage."""
    direct, fronted = _response(inner, stream), _response(outer, stream)
    assert fronted["output"][0]["content"][0]["text"] == direct["output"][0]["content"][0]["text"] == ANSWER
    assert fronted["usage"] == direct["usage"]
    assert fronted["status"] == direct["status"] == "completed"


def test_models_come_from_the_upstream(outer: Server) -> None:
    assert [m["id"] for m in httpx.get(outer.v1 + "/models").json()["data"]] == ["scripted"]


def test_a_client_leaving_the_front_server_cancels_the_upstream_generation(
    inner: Server, outer: Server
) -> None:
    engine = inner.app.service.engine
    assert isinstance(engine, ScriptedEngine)
    before = engine.cancelled
    seen = threading.Event()
    with httpx.stream(
        "POST", outer.v1 + "/responses", json={"model": "m", "input": "endless", "stream": True}, timeout=30
    ) as response:
        for line in response.iter_lines():
            if "output_text.delta" in line:
                seen.set()
                break
    assert seen.is_set()
    assert wait_until(lambda: engine.cancelled > before)


class _Breaking:
    """An engine with a bug: it raises after its first chunk."""

    model_name = "breaking"
    capabilities = EngineCapabilities()

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[GenerationOutput, None]:
        yield Chunk(text="half")
        raise RuntimeError("bug")

    async def count_tokens(self, prompt: str) -> int:
        return 1

    async def aclose(self) -> None:
        return None


def test_an_engine_that_raises_mid_stream_still_ends_the_body_cleanly(tmp_path: Path) -> None:
    settings = scripted_settings(write_script(tmp_path, []))
    app = build_app(settings, engine=_Breaking())
    with running(settings, app=app) as srv:
        answer = httpx.post(srv.v1 + "/completions", json={"prompt": "hi", "stream": True})
    frames = _sse_data(answer.content)
    assert frames[0]["choices"][0]["text"] == "half"
    assert frames[-2]["error"]["code"] == "internal_error" and frames[-1] == "[DONE]"
