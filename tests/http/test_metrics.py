"""``/metrics`` (SPEC H1): parseable by prometheus_client after hostile paths, bounded labels,
histograms per route and cause, engine statistics, process metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from accord.adapters.build import build_app
from accord.adapters.http.app import AccordApp
from accord.adapters.metrics import Metrics
from tests.serving import scripted_settings, write_script

pytestmark = pytest.mark.anyio

HOSTILE = [
    '/v1/x"} 1\nfake_metric 99\n#',
    "/v1/\\n\\\\",
    "/%22%7D%20evil",
    "/v1/" + "a" * 5000,
    "/\u00e9\u4e2d/\U0001f600",
    "/v1/responses/../../etc/passwd",
]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _app(tmp: Path) -> AccordApp:
    rules = [{"output": "one two three four", "chunk_chars": 4}]
    return build_app(scripted_settings(write_script(tmp, rules), store="none"))


def _families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


async def _scrape(client: httpx.AsyncClient) -> dict[str, Any]:
    resp = await client.get("/metrics")
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/plain; version=0.0.4")
    return _families(resp.text)


async def _raw(app: AccordApp, method: str, path: str) -> int:
    """One request straight to the ASGI app, with a path no HTTP client would send."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode("utf-8", "surrogateescape"),
        "query_string": b"",
        "headers": [(b"host", b"localhost")],
        "client": ("127.0.0.1", 1),
        "server": ("test", 80),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return int(sent[0]["status"])


async def test_hostile_paths_leave_metrics_parseable_and_labels_bounded(tmp_path: Path) -> None:
    app = _app(tmp_path)
    for path in HOSTILE:
        for method in ("GET", "POST", 'X"}'):
            assert 400 <= await _raw(app, method, path) < 500
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        families = await _scrape(client)
    routes = {s.labels["route"] for s in families["accord_requests"].samples}
    assert routes == {"unmatched"}
    assert "fake_metric" not in families
    statuses = {s.labels["status"] for s in families["accord_requests"].samples}
    assert statuses == {"404"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.text(min_size=1, max_size=60))
def test_any_path_keeps_metrics_parseable(tmp_path: Path, path: str) -> None:
    app = _app(tmp_path)

    async def go() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            await _raw(app, "GET", "/" + path)
            return await _scrape(client)

    families = anyio.run(go)
    assert {s.labels["route"] for s in families["accord_requests"].samples} <= {
        "unmatched",
        "responses",
        "models",
        "health",
        "version",
        "metrics",
        "openapi.json",
        "completions",
    }


async def test_histograms_per_route_and_cause(tmp_path: Path) -> None:
    app = _app(tmp_path)
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        for stream in (True, False):
            resp = await client.post("/v1/responses", json={"model": "m", "input": "hi", "stream": stream})
            assert resp.status_code == 200
        resp = await client.post("/v1/responses", json={"model": "m", "input": 5})
        assert resp.status_code == 400
        families = await _scrape(client)

    def count(family: str, **labels: str) -> float:
        return sum(
            s.value
            for s in families[family].samples
            if s.name.endswith("_count") and all(s.labels.get(k) == v for k, v in labels.items())
        )

    assert count("accord_e2e_request_latency_seconds", route="responses", cause="completed") == 2
    assert count("accord_time_to_first_token_seconds", route="responses", cause="completed") == 2
    # Only the streamed response counts towards time to first event, and it had several batches.
    assert count("accord_time_to_first_event_seconds", route="responses") == 1
    assert count("accord_inter_event_gap_seconds", route="responses", cause="completed") >= 1
    buckets = [
        s.labels["le"] for s in families["accord_time_to_first_token_seconds"].samples if "le" in s.labels
    ]
    assert "0.001" in buckets and "2560.0" in buckets
    requests = {
        (s.labels["route"], s.labels["status"], s.labels["cause"]): s.value
        for s in families["accord_requests"].samples
        if s.name == "accord_requests_total"
    }
    assert requests[("responses", "200", "completed")] == 2
    assert requests[("responses", "400", "rejected")] == 1
    tokens = {s.labels["kind"]: s.value for s in families["accord_tokens"].samples if "kind" in s.labels}
    assert tokens["output"] > 0
    # Process metrics come with the same names as any Python exporter's.
    assert "process_cpu_seconds" in families
    assert "process_resident_memory_bytes" in families


def test_local_engine_statistics_are_exported() -> None:
    from accord.engine.local import EngineStatistics

    stats = EngineStatistics(
        block_size=16,
        blocks_total=100,
        blocks_free=75,
        blocks_cached=10,
        blocks_in_use=25,
        running=3,
        waiting=2,
        prefix_hit_tokens=640,
        prompt_tokens=1000,
        preemptions=1,
        steps=9,
    )
    families = _families(Metrics(lambda: stats, process=False).render().decode())
    assert families["accord_num_requests_running"].samples[0].value == 3
    assert families["accord_num_requests_waiting"].samples[0].value == 2
    assert families["accord_kv_blocks_used"].samples[0].value == 25
    assert families["accord_kv_blocks_free"].samples[0].value == 75
    assert families["accord_kv_cache_usage_perc"].samples[0].value == pytest.approx(0.25)
    assert families["accord_prefix_cache_hits"].samples[0].value == 640
    assert "accord_upstream_up" not in families


def test_upstream_statistics_are_exported() -> None:
    pools = [
        [
            {"url": "http://a:8000", "state": "up", "in_flight": 4, "requests": 10, "failures": 1},
            {"url": 'http://b"}:8000', "state": "down", "in_flight": 0, "requests": 3, "failures": 3},
        ]
    ]
    families = _families(Metrics(lambda: {"pools": pools}, process=False).render().decode())
    up = {s.labels["url"]: s.value for s in families["accord_upstream_up"].samples}
    assert up == {"http://a:8000": 1.0, 'http://b"}:8000': 0.0}
    errors = {s.labels["url"]: s.value for s in families["accord_upstream_errors"].samples}
    assert errors['http://b"}:8000'] == 3
    assert "accord_num_requests_running" not in families


def test_a_failing_statistics_call_does_not_break_the_scrape() -> None:
    def broken() -> Any:
        raise RuntimeError("engine gone")

    families = _families(Metrics(broken, process=False).render().decode())
    assert "accord_requests" in families


def test_apps_have_registries_of_their_own(tmp_path: Path) -> None:
    first, second = _app(tmp_path), _app(tmp_path)
    first.metrics.request("responses", 200, "completed")
    assert b'route="responses"' in first.metrics.render()
    assert b'route="responses"' not in second.metrics.render()


async def test_a_real_remote_engine_feeds_the_upstream_series() -> None:
    from accord.engine.remote import RemoteEngine
    from tests.serving import free_port

    url = f"http://127.0.0.1:{free_port()}"
    engine = RemoteEngine([url], model_name="m")
    try:
        metrics = Metrics(engine.statistics, process=False)
        assert _families(metrics.render().decode())["accord_upstream_up"].samples[0].value == 0.0
        assert await engine.pool.probe(engine.pool.upstreams[0]) is False  # nothing listens there
        families = _families(metrics.render().decode())
        assert families["accord_upstream_up"].samples[0].labels == {"url": url}
        assert families["accord_upstream_up"].samples[0].value == 0.0
        assert "accord_upstream_in_flight" in families
    finally:
        await engine.aclose()
