"""The openai SDK against a real hypercorn server on loopback (issue acceptance, SPEC W1–W11)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.oracle import check_stream
from tests.serving import parse_sse, running, scripted_settings, write_script

RULES: list[dict[str, Any]] = [
    {
        "when": {"last_input": "^fail"},
        "output": "partial answer",
        "chunk_chars": 3,
        "fail": {"after_chunks": 2},
    },
    {"when": {"last_input": "^long"}, "output": "one two three four five six seven", "finish": "length"},
    {"when": {"last_input": "^huge"}, "output": "never"},
    {"when": {"last_input": "^slow"}, "output": "late", "first_chunk_delay_s": 1.3},
    {"when": {"last_input": "^endless"}, "output": "tick " * 400, "chunk_chars": 5, "chunk_delay_s": 0.01},
    {"output": "Hello there, how can I help you today?", "chunk_chars": 5},
]


@pytest.fixture
def server(tmp_path: Path, worker_class: str) -> Any:
    script = write_script(tmp_path, RULES)
    with running(
        scripted_settings(script, worker_class=worker_class, keepalive_interval=0.4, max_context=200)
    ) as srv:
        yield srv


def client(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.v1, api_key="unused", max_retries=0, timeout=20)


def test_streamed_helper_and_plain_create_agree(server: Any) -> None:
    """Stream, stream helper and non-streamed create give the same items, ids aside, text for text."""
    c = client(server)
    events = [
        e.model_dump(mode="json", exclude_unset=True)
        for e in c.responses.create(model="m", input="hi", stream=True)
    ]
    final = check_stream(events)
    with c.responses.stream(model="m", input="hi") as stream:
        for _ in stream:
            pass
        helper = stream.get_final_response()
    plain = c.responses.create(model="m", input="hi")
    texts = {final["output"][0]["content"][0]["text"], helper.output_text, plain.output_text}
    assert texts == {"Hello there, how can I help you today?"}
    assert plain.status == "completed" and plain.usage is not None and plain.usage.output_tokens > 0
    assert helper.id != plain.id


def test_raw_sse_framing_and_sequence(server: Any) -> None:
    """SPEC W11: `event:`/`data:` frames, no [DONE], sequence 0..n, body ends after the terminal event."""
    raw = httpx.post(server.v1 + "/responses", json={"model": "m", "input": "hi", "stream": True}).content
    assert b"[DONE]" not in raw
    events = parse_sse(raw)
    check_stream(events)
    assert events[-1]["type"] == "response.completed"


def test_failure_mid_stream_is_error_then_failed(server: Any) -> None:
    """SPEC W6: `error` + `response.failed`, clean end of body; the SDK iterator does not raise."""
    c = client(server)
    events = [
        e.model_dump(mode="json", exclude_unset=True)
        for e in c.responses.create(model="m", input="fail now", stream=True)
    ]
    check_stream(events)
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["code"] == "engine_error"
    with pytest.raises(openai.InternalServerError):
        c.responses.create(model="m", input="fail now")


def test_length_finish_is_incomplete(server: Any) -> None:
    c = client(server)
    events = [
        e.model_dump(mode="json", exclude_unset=True)
        for e in c.responses.create(model="m", input="long", stream=True)
    ]
    final = check_stream(events)
    assert final["status"] == "incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["output"][0]["status"] == "incomplete"


def test_context_length_exceeded_streamed_is_four_events(server: Any) -> None:
    """SPEC W7: created, in_progress, error, failed numbered 0–3; non-streamed: HTTP 400 with the code."""
    big = "huge " + "word " * 400
    raw = httpx.post(server.v1 + "/responses", json={"model": "m", "input": big, "stream": True}).content
    events = parse_sse(raw)
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "error",
        "response.failed",
    ]
    assert [e["sequence_number"] for e in events] == [0, 1, 2, 3]
    assert events[2]["code"] == "context_length_exceeded"
    assert events[3]["response"]["error"]["code"] == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError) as info:
        client(server).responses.create(model="m", input=big)
    assert info.value.code == "context_length_exceeded"


def test_slow_first_chunk_gets_numbered_keepalives(server: Any) -> None:
    """SPEC W8/W9: created+in_progress at once, then repeated in_progress while the engine is silent."""
    raw = httpx.post(
        server.v1 + "/responses", json={"model": "m", "input": "slow", "stream": True}, timeout=10
    ).content
    events = parse_sse(raw)
    check_stream(events)
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.in_progress"]
    assert kinds.count("response.in_progress") >= 3
    assert events[2]["response"] == events[0]["response"]


def test_disconnect_mid_stream_stops_the_engine(server: Any) -> None:
    """SPEC W10: closing the connection mid-stream cancels generation (asserted on the engine)."""
    engine = server.app.service.engine
    before = engine.cancelled
    with (
        httpx.Client(timeout=10) as h,
        h.stream(
            "POST", server.v1 + "/responses", json={"model": "m", "input": "endless", "stream": True}
        ) as resp,
    ):
        for line in resp.iter_lines():
            if "output_text.delta" in line:
                break
    for _ in range(200):
        if engine.cancelled > before:
            break
        httpx.get(server.base_url + "/health")
    assert engine.cancelled == before + 1
    metrics = httpx.get(server.base_url + "/metrics").text
    assert 'cause="client_disconnected"' in metrics


def test_bad_requests_are_clean_4xx(server: Any) -> None:
    """SPEC I11: invalid JSON, wrong types, broken UTF-8, unknown items -> 4xx naming the field."""
    url = server.v1 + "/responses"
    cases: list[tuple[bytes, str | None]] = [
        (b"{not json", None),
        (json.dumps({"model": "m", "input": 5}).encode(), "input"),
        (json.dumps({"model": "m", "input": [{"type": "no_such_item"}]}).encode(), "input[0]"),
        (json.dumps({"model": "m", "input": "x", "temperature": "hot"}).encode(), "temperature"),
        (b'{"model":"m","input":"\xff\xfe"}', None),
    ]
    for body, param in cases:
        resp = httpx.post(url, content=body, headers={"content-type": "application/json"})
        assert 400 <= resp.status_code < 500, (body, resp.status_code, resp.text)
        err = resp.json()["error"]
        assert set(err) == {"message", "type", "param", "code"}
        if param is not None:
            assert err["param"] is not None and err["param"].startswith(param), err
        assert len(resp.content) < 4096


def test_body_over_limit_is_413(tmp_path: Path, worker_class: str) -> None:
    script = write_script(tmp_path, RULES)
    with running(scripted_settings(script, worker_class=worker_class, max_body_bytes=1000)) as srv:
        resp = httpx.post(srv.v1 + "/responses", json={"model": "m", "input": "x" * 5000})
        assert resp.status_code == 413
        assert resp.json()["error"]["code"] == "request_too_large"


def test_unknown_top_level_fields_are_ignored(server: Any) -> None:
    resp = httpx.post(
        server.v1 + "/responses", json={"model": "m", "input": "hi", "brand_new_field": {"x": 1}}
    )
    assert resp.status_code == 200
    assert resp.json()["status"] == "completed"


def test_service_routes(server: Any) -> None:
    """SPEC H1: models, health, version, metrics, openapi."""
    assert httpx.get(server.base_url + "/health").json() == {"status": "ok"}
    assert "version" in httpx.get(server.base_url + "/version").json()
    models = client(server).models.list()
    assert [m.id for m in models.data] == ["scripted"]
    spec = httpx.get(server.base_url + "/openapi.json").json()
    assert "/v1/responses" in spec["paths"]
    assert "post" in spec["paths"]["/v1/responses/{id}/cancel"]
    assert {"get", "delete"} <= set(spec["paths"]["/v1/responses/{id}"])
    assert "post" in spec["paths"]["/v1/responses/input_tokens"]
    assert "accord_requests_total" in httpx.get(server.base_url + "/metrics").text


def test_api_key_is_enforced(tmp_path: Path, worker_class: str) -> None:
    script = write_script(tmp_path, RULES)
    with running(scripted_settings(script, worker_class=worker_class, api_key="s3cret")) as srv:
        bad = openai.OpenAI(base_url=srv.v1, api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            bad.responses.create(model="m", input="hi")
        good = openai.OpenAI(base_url=srv.v1, api_key="s3cret", max_retries=0)
        assert good.responses.create(model="m", input="hi").status == "completed"
        assert httpx.get(srv.base_url + "/health").status_code == 200


def test_one_log_line_per_request_without_prompt_text(server: Any) -> None:
    """SPEC H2: one structured line per request with id, status, cause, tokens and timings; no prompt."""
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        client(server).responses.create(model="m", input="secret prompt words")
        # The line is written once the body has gone out, so it may land just after the reply.
        for _ in range(100):
            if any(entry.get("event") == "response" for entry in logs):
                break
            httpx.get(server.base_url + "/health")
    lines = [entry for entry in logs if entry.get("event") == "response"]
    assert len(lines) == 1
    line = lines[0]
    assert line["response_id"].startswith("resp_")
    assert line["status"] == 200 and line["cause"] == "completed"
    assert line["input_tokens"] > 0 and line["output_tokens"] > 0
    assert "duration_s" in line and "ttft_s" in line
    assert "secret prompt" not in repr(logs)


def test_time_to_first_token_is_measured_on_one_clock(server: Any) -> None:
    """The logged TTFT is between 0 and the request's duration on both backends (trio's clock differs)."""
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        client(server).responses.create(model="m", input="hi")
        for _ in range(100):
            if any(entry.get("event") == "response" for entry in logs):
                break
            httpx.get(server.base_url + "/health")
    line = next(entry for entry in logs if entry.get("event") == "response")
    assert 0 <= line["ttft_s"] <= line["duration_s"] + 0.01
