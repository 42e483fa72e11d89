"""WebSocket mode for ``/v1/responses`` against hypercorn on both worker classes (issue 15)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests.oracle import check_stream
from tests.serving import parse_sse, running, scripted_settings, write_script

RULES: list[dict[str, Any]] = [
    {
        "when": {"last_input": "^fail"},
        "output": "partial answer",
        "chunk_chars": 3,
        "fail": {"after_chunks": 2},
    },
    {"when": {"last_input": "^slow"}, "chunks": ["a", "b", "c"], "chunk_delay_s": 0.3},
    {"when": {"last_input": "^endless"}, "output": "tick " * 400, "chunk_chars": 5, "chunk_delay_s": 0.01},
    {"output": "Hello there, how can I help you today?", "chunk_chars": 5},
]
TERMINAL = {"response.completed", "response.failed", "response.incomplete", "response.cancelled"}


@pytest.fixture
def server(tmp_path: Path, worker_class: str) -> Any:
    script = write_script(tmp_path, RULES)
    with running(scripted_settings(script, worker_class=worker_class, keepalive_interval=0.1)) as srv:
        yield srv


def ws_url(server: Any) -> str:
    return server.v1.replace("http://", "ws://") + "/responses"


def until_end(ws: Any) -> list[dict[str, Any]]:
    events = []
    while True:
        event = json.loads(ws.recv(timeout=20))
        events.append(event)
        if event["type"] in TERMINAL or (event["type"] == "error" and "sequence_number" not in event):
            return events


def without_keepalives(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for i, e in enumerate(events) if i < 2 or e["type"] != "response.in_progress"]


def test_same_events_as_sse(server: Any) -> None:
    body = {"model": "m", "input": "slow please"}
    sse = parse_sse(httpx.post(server.v1 + "/responses", json={**body, "stream": True}, timeout=20).content)
    with connect(ws_url(server)) as ws:
        ws.send(json.dumps({"type": "response.create", **body}))
        frames = until_end(ws)
    check_stream(frames)
    # Keepalives fall where the clock puts them; everything else is the SSE stream, event for event.
    assert without_keepalives(frames) == without_keepalives(sse)
    assert [e["sequence_number"] for e in frames] == list(range(len(frames)))
    assert "response.in_progress" in [e["type"] for e in frames[3:]]  # keepalives travel too
    assert frames[-1]["response"]["output"][0]["content"][0]["text"] == "abc"


def test_sequence_on_one_connection_with_previous_response_id(server: Any) -> None:
    c = openai.OpenAI(base_url=server.v1, api_key="unused", max_retries=0)
    with c.responses.connect() as conn:
        conn.response.create(model="m", input="hi")
        first = [e for e in conn_events(conn)][-1].response
        conn.response.create(model="m", input="hi", previous_response_id=first.id)
        second = [e for e in conn_events(conn)][-1].response
        conn.response.create(model="m", input="hi", stream_id="lane-a")
        third = conn_events(conn)
    assert second.previous_response_id == first.id
    assert second.usage.input_tokens > first.usage.input_tokens
    assert {getattr(e, "stream_id", None) for e in third} == {"lane-a"}
    stored = c.responses.retrieve(second.id)
    assert stored.output_text == second.output_text == "Hello there, how can I help you today?"


def conn_events(conn: Any) -> list[Any]:
    out = []
    for event in conn:
        out.append(event)
        if event.type in TERMINAL or event.type == "error":
            return out
    raise AssertionError("connection closed before the end of a response")


def test_errors_are_events_and_the_connection_survives(server: Any) -> None:
    with connect(ws_url(server)) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "m", "input": "fail now"}))
        failed = until_end(ws)
        assert [e["type"] for e in failed[-2:]] == ["error", "response.failed"]
        assert failed[-2]["error"]["code"] == failed[-2]["code"] == "engine_error"
        assert failed[-2]["status"] == 500 and failed[-2]["sequence_number"] == len(failed) - 2
        refusals = [
            ({"type": "response.create", "model": "m", "input": 3}, 400, "input"),
            (
                {"type": "response.create", "input": "hi", "previous_response_id": "resp_nope"},
                404,
                "previous_response_id",
            ),
            ({"type": "response.create", "input": "hi", "background": True}, 400, "background"),
            ({"type": "response.create", "input": "hi", "stream": False}, 400, "stream"),
            ({"type": "response.steer", "input": "hi", "previous_response_id": "x"}, 400, "type"),
        ]
        for message, status, param in refusals:
            ws.send(json.dumps(message))
            [error] = until_end(ws)
            assert error["type"] == "error" and error["status"] == status, error
            assert error["error"]["param"] == param, error
        ws.send("not json")
        assert json.loads(ws.recv(timeout=10))["status"] == 400
        ws.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        assert until_end(ws)[-1]["type"] == "response.completed"


def test_closing_mid_stream_cancels_the_response(server: Any) -> None:
    engine = server.app.service.engine
    before = engine.cancelled
    with connect(ws_url(server)) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "m", "input": "endless"}))
        response_id = None
        while True:
            event = json.loads(ws.recv(timeout=10))
            if event["type"] == "response.created":
                response_id = event["response"]["id"]
            if event["type"] == "response.output_text.delta":
                break
    for _ in range(200):
        if engine.cancelled > before:
            break
        httpx.get(server.base_url + "/health")
    assert engine.cancelled == before + 1
    for _ in range(200):
        stored = httpx.get(f"{server.v1}/responses/{response_id}")
        if stored.status_code == 200:
            break
    assert stored.json()["status"] == "cancelled"


def test_refusals_with_close_codes_and_http_answers(server: Any) -> None:
    with connect(ws_url(server)) as ws:
        ws.send(b"\x00\x01")
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1003
    with pytest.raises(InvalidStatus) as refused:
        connect(server.v1.replace("http://", "ws://") + "/chat/completions")
    assert refused.value.response.status_code == 404
    assert b"/v1/responses" in refused.value.response.body


def test_api_key_is_checked_at_the_upgrade(tmp_path: Path, worker_class: str) -> None:
    settings = scripted_settings(write_script(tmp_path, RULES), worker_class=worker_class, api_key="sekret")
    with running(settings) as srv:
        with pytest.raises(InvalidStatus) as refused:
            connect(ws_url(srv))
        assert refused.value.response.status_code == 401
        with connect(ws_url(srv), additional_headers={"Authorization": "Bearer sekret"}) as ws:
            ws.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
            assert until_end(ws)[-1]["type"] == "response.completed"


def test_shutdown_closes_an_idle_connection_going_away(tmp_path: Path, worker_class: str) -> None:
    settings = scripted_settings(write_script(tmp_path, RULES), worker_class=worker_class)
    with running(settings) as srv, connect(ws_url(srv)) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        assert until_end(ws)[-1]["type"] == "response.completed"
        srv.stop.set()
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=20)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
