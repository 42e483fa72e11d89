"""Hostile and random Chat Completions and Messages bodies over HTTP: never a 5xx, and every
refusal in the protocol's own error shape, naming the field it is about (SPEC I1, I11).

The request-shaped bodies are the same strategies the request-model tests draw from, sent
through the whole app in-process (no socket), so routing, auth, decoding, normalising and
the run are all on the path.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.adapters.build import build_app
from accord.adapters.http.app import AccordApp
from tests.protocols.test_chat_requests import request as chat_bodies
from tests.protocols.test_messages_requests import request as messages_bodies
from tests.serving import scripted_settings, write_script

_FIELD_FIRST = re.compile(r"^[A-Za-z_][\w.\[\]]*: ")
_QUOTED = re.compile(r"'[A-Za-z_][\w.\[\]]*'")
_SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _app(tmp: Path, **extra: Any) -> AccordApp:
    script = write_script(tmp, [{"output": "ok"}])
    return build_app(scripted_settings(script, max_body_bytes=100_000, store="none", **extra))


async def _post(
    app: AccordApp, path: str, content: bytes, headers: dict[str, str] | None = None
) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        return await client.post(
            path, content=content, headers={"content-type": "application/json", **(headers or {})}
        )


def check_chat(resp: httpx.Response, *, named: bool) -> None:
    assert resp.status_code < 500, resp.text
    if resp.status_code >= 400:
        assert len(resp.content) <= 4096
        error = resp.json()["error"]
        assert isinstance(error["message"], str) and error["message"]
        if named and resp.status_code == 400 and error.get("code") != "invalid_json":
            assert error["param"], error


def check_messages(resp: httpx.Response, *, named: bool) -> None:
    assert resp.status_code < 500, resp.text
    if resp.status_code >= 400:
        assert len(resp.content) <= 4096
        body = resp.json()
        assert body["type"] == "error" and set(body["error"]) == {"type", "message"}
        assert body["error"]["type"] == "invalid_request_error" or resp.status_code != 400
        if named and resp.status_code == 400 and "JSON" not in body["error"]["message"]:
            # As Anthropic words it, the field first ("messages.0.content: ..."), or quoted in the text.
            message = body["error"]["message"]
            assert _FIELD_FIRST.match(message) or _QUOTED.search(message), body


@_SETTINGS
@given(body=chat_bodies)
def test_chat_shaped_bodies_never_5xx_and_name_the_field(tmp_path: Path, body: dict[str, Any]) -> None:
    resp = anyio.run(_post, _app(tmp_path), "/v1/chat/completions", json.dumps(body).encode())
    check_chat(resp, named=True)


@_SETTINGS
@given(body=messages_bodies)
def test_messages_shaped_bodies_never_5xx_and_name_the_field(tmp_path: Path, body: dict[str, Any]) -> None:
    resp = anyio.run(_post, _app(tmp_path), "/v1/messages", json.dumps(body).encode())
    check_messages(resp, named=True)
    count = anyio.run(_post, _app(tmp_path), "/v1/messages/count_tokens", json.dumps(body).encode())
    check_messages(count, named=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=200), path=st.sampled_from(["/v1/chat/completions", "/v1/messages"]))
def test_arbitrary_bytes_never_5xx(tmp_path: Path, raw: bytes, path: str) -> None:
    resp = anyio.run(_post, _app(tmp_path), path, raw)
    (check_messages if path == "/v1/messages" else check_chat)(resp, named=False)


def test_refusals_name_the_field(tmp_path: Path) -> None:
    app = _app(tmp_path)
    chat_body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 2}
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "text"}]}]}

    async def requests() -> list[httpx.Response]:
        return [
            await _post(app, "/v1/chat/completions", json.dumps(chat_body).encode()),
            await _post(app, "/v1/messages", json.dumps(body).encode()),
            await _post(app, "/v1/messages", b'{"model": "m", "messages": []}'),
        ]

    chat, messages, missing = anyio.run(requests)
    assert chat.status_code == 400 and chat.json()["error"]["param"] == "n"
    assert messages.status_code == 400
    assert messages.json()["error"]["type"] == "invalid_request_error"
    assert "messages[0].content[0].text" in messages.json()["error"]["message"]
    assert missing.status_code == 400 and "max_tokens" in missing.json()["error"]["message"]


def test_auth_takes_x_api_key_and_answers_in_each_protocols_shape(tmp_path: Path) -> None:
    app = _app(tmp_path, api_key="sekrit")
    body = json.dumps(
        {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()

    async def requests() -> list[httpx.Response]:
        return [
            await _post(app, "/v1/messages", body),
            await _post(app, "/v1/messages", body, {"x-api-key": "sekrit"}),
            await _post(app, "/v1/messages", body, {"authorization": "Bearer sekrit"}),
            await _post(app, "/v1/messages", body, {"x-api-key": "wrong"}),
            await _post(app, "/v1/chat/completions", b"{}"),
        ]

    refused, by_header, by_bearer, wrong, chat = anyio.run(requests)
    assert refused.status_code == 401
    assert refused.json() == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid or missing API key"},
    }
    assert by_header.status_code == 200 and by_header.json()["type"] == "message"
    assert by_bearer.status_code == 200
    assert wrong.status_code == 401
    assert chat.status_code == 401 and chat.json()["error"]["code"] == "invalid_api_key"
