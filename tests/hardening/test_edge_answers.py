"""The edge's answers to hostile or careless requests: a clean 4xx that names the field or header.

Local-server safety (a web page must not drive a server on loopback), the headers RFC 9110
asks of 401 and 405, the byte cap of error bodies (SPEC I11) and the field-naming refusals.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.adapters.build import build_app
from accord.adapters.http.app import AccordApp
from accord.adapters.http.exchange import error_body
from accord.adapters.http.safety import RequestGuard, default_hosts, host_name
from tests.serving import scripted_settings, write_script

JSON = {"content-type": "application/json"}


def _app(tmp: Path, **extra: Any) -> AccordApp:
    return build_app(scripted_settings(write_script(tmp, [{"output": "ok"}]), **extra))


async def _call(
    app: AccordApp, method: str, path: str, base: str = "http://localhost", **kw: Any
) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url=base) as client:
        return await client.request(method, path, **kw)


@pytest.mark.anyio
async def test_a_body_not_declared_json_is_415(tmp_path: Path) -> None:
    app = _app(tmp_path)
    body = json.dumps({"input": "hi"})
    for headers in (
        {"content-type": "text/plain"},
        {},
        {"content-type": "application/x-www-form-urlencoded"},
    ):
        resp = await _call(app, "POST", "/v1/responses", content=body, headers=headers)
        assert resp.status_code == 415, headers
        assert resp.json()["error"]["param"] == "Content-Type"
    ok = await _call(
        app,
        "POST",
        "/v1/responses",
        content=body,
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert ok.status_code == 200


@pytest.mark.anyio
async def test_a_rebound_host_name_is_403(tmp_path: Path) -> None:
    app = _app(tmp_path)
    resp = await _call(
        app, "POST", "/v1/responses", base="http://attacker.example:8000", json={"input": "hi"}
    )
    assert resp.status_code == 403
    assert resp.json()["error"]["code"] == "host_not_allowed"
    for base in ("http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"):
        assert (await _call(app, "GET", "/v1/models", base=base)).status_code == 200, base


@pytest.mark.anyio
async def test_a_cross_site_origin_is_403_unless_allowed(tmp_path: Path) -> None:
    app = _app(tmp_path)
    resp = await _call(
        app, "POST", "/v1/responses", json={"input": "hi"}, headers={"origin": "https://evil.example"}
    )
    assert resp.status_code == 403
    assert resp.json()["error"]["param"] == "Origin"
    guard = RequestGuard.for_server("127.0.0.1", [], ["https://ui.example"])
    guard.check({"host": "localhost:8000", "origin": "https://ui.example/"})


def test_host_defaults_follow_the_bind_address() -> None:
    assert default_hosts("0.0.0.0") is None
    assert default_hosts("::") is None
    assert default_hosts("10.1.2.3") == {"localhost", "127.0.0.1", "::1", "10.1.2.3"}
    assert RequestGuard.for_server("127.0.0.1", ["*"], []).hosts is None
    assert host_name("[::1]:8000") == "::1"
    assert host_name("Example.COM:80") == "example.com"


@pytest.mark.anyio
async def test_405_says_allow_and_401_says_www_authenticate(tmp_path: Path) -> None:
    app = _app(tmp_path, api_key="sekrit")
    denied = await _call(app, "POST", "/v1/responses", json={"input": "hi"})
    assert denied.status_code == 401
    assert denied.headers["www-authenticate"].startswith("Bearer")
    wrong = await _call(app, "PUT", "/v1/models", headers={"authorization": "Bearer sekrit"})
    assert wrong.status_code == 405
    assert wrong.headers["allow"] == "GET"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "x", "max_output_tokens": 2**70}, "max_output_tokens"),
        ({"input": "x", "include": ["bogus"]}, "include[0]"),
        ({"input": "x", "previous_response_id": ""}, "previous_response_id"),
        ({"input": "x", "metadata": {"k" * 65: "v"}}, "metadata"),
    ],
)
async def test_bad_fields_are_400_naming_them(tmp_path: Path, body: dict[str, Any], param: str) -> None:
    resp = await _call(_app(tmp_path), "POST", "/v1/responses", json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["param"] == param


@pytest.mark.anyio
async def test_completions_nested_a_thousand_deep_is_400(tmp_path: Path) -> None:
    deep = b'{"prompt": "x", "stop": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    resp = await _call(_app(tmp_path), "POST", "/v1/completions", content=deep, headers=JSON)
    assert resp.status_code == 400


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    message=st.text(min_size=1, max_size=12).map(lambda t: t * 800),
    param=st.one_of(st.none(), st.text(min_size=1, max_size=12).map(lambda t: t * 200)),
)
def test_error_bodies_fit_in_4_kib_whatever_they_echo(message: str, param: str | None) -> None:
    from accord.adapters.http.exchange import _json

    encoded = _json.encode(error_body(message, type="invalid_request_error", param=param, code="x"))
    assert len(encoded) <= 4096


def test_control_characters_do_not_blow_the_cap() -> None:
    from accord.adapters.http.exchange import _json

    encoded = _json.encode(
        error_body("\x01" * 4000, type="invalid_request_error", param="\x02" * 4000, code=None)
    )
    assert len(encoded) <= 4096
