"""/health is liveness (503 while draining), /ready readiness; CORS for --allowed-origins (SPEC H1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from accord.adapters.build import build_app
from accord.adapters.http.app import AccordApp
from accord.adapters.http.health import engine_readiness
from accord.engine.remote import RemoteEngine
from tests.serving import free_port, scripted_settings, write_script

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _app(tmp: Path, **extra: Any) -> AccordApp:
    return build_app(scripted_settings(write_script(tmp, [{"output": "ok"}]), store="none", **extra))


def _client(app: AccordApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost")  # type: ignore[arg-type]


async def test_health_and_ready_while_serving_and_draining(tmp_path: Path) -> None:
    app = _app(tmp_path, api_key="k")
    async with _client(app) as client:
        health, ready = await client.get("/health"), await client.get("/ready")
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        assert ready.status_code == 200 and ready.json()["ready"] is True
        app.lifecycle.draining = True
        health, ready = await client.get("/health"), await client.get("/ready")
    assert (health.status_code, health.json()) == (503, {"status": "draining"})
    assert ready.status_code == 503 and ready.json()["status"] == "draining"


async def test_ready_follows_the_upstreams() -> None:
    # A real remote engine whose only upstream refuses connections: the engine asks its
    # upstreams when readiness is read, so the server is not ready.
    engine = RemoteEngine([f"http://127.0.0.1:{free_port()}"], model_name="m")
    try:
        report = await engine_readiness(engine)
        assert report["ready"] is False
        assert report["upstreams"][0]["state"] == "down"
    finally:
        await engine.aclose()


async def test_cors_preflight_and_response_headers(tmp_path: Path) -> None:
    app = _app(tmp_path, allowed_origins=["https://app.example", "https://b.example"])
    preflight_headers = {
        "origin": "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
    }
    async with _client(app) as client:
        preflight = await client.options("/v1/responses", headers=preflight_headers)
        other = await client.options(
            "/v1/responses", headers={**preflight_headers, "origin": "https://evil.example"}
        )
        allowed = await client.get("/v1/models", headers={"origin": "https://b.example"})
        refused = await client.get("/v1/models", headers={"origin": "https://evil.example"})
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert preflight.headers["access-control-allow-headers"] == "authorization, content-type"
    assert other.status_code == 403 and "access-control-allow-origin" not in other.headers
    assert allowed.headers["access-control-allow-origin"] == "https://b.example"
    assert allowed.headers["vary"] == "Origin"
    assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers


async def test_cors_any_origin_and_none_configured(tmp_path: Path) -> None:
    headers = {"origin": "https://x.example", "access-control-request-method": "GET"}
    async with _client(_app(tmp_path, allowed_origins=["*"])) as client:
        preflight = await client.options("/health", headers=headers)
    assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == "*"
    async with _client(_app(tmp_path)) as client:
        plain = await client.options("/health", headers=headers)
    assert plain.status_code == 403
