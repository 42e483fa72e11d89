"""Log hygiene and metrics labels: one line per request, storms cut short, no client-made series."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from accord.adapters.build import build_app
from accord.adapters.http.app import AccordApp
from accord.adapters.http.storms import StormFilter
from tests.serving import scripted_settings, write_script

HOSTILE = [
    '/evil"} 1 accord_injected_metric{x="1',
    "/v1/evil%22%7D%201%0Aaccord_injected_metric",
    *[f"/unique/{n}" for n in range(50)],
]


def _app(tmp: Path, **extra: Any) -> AccordApp:
    return build_app(scripted_settings(write_script(tmp, [{"output": "ok"}]), **extra))


def _samples(text: str) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
    return sorted(
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    )


@pytest.mark.anyio
async def test_hostile_paths_leave_metrics_unchanged(tmp_path: Path) -> None:
    app = _app(tmp_path, api_key="k")
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        before = (await client.get("/metrics", headers={"authorization": "Bearer k"})).text
        for path in HOSTILE:
            for auth in ({}, {"authorization": "Bearer k"}):
                assert (await client.get(path, headers=auth)).status_code in (401, 404)
        after = (await client.get("/metrics", headers={"authorization": "Bearer k"})).text
    assert "injected" not in after
    # Only the request counter moved, and only under bounded labels: the /metrics read itself
    # and the hostile requests, all counted as `unmatched` whatever path they named.
    # (process_* samples move by themselves: CPU time and memory.)
    changed = {s for s in set(_samples(after)) - set(_samples(before)) if not s[0].startswith("process_")}
    assert {name for name, _, _ in changed} <= {"accord_requests_total"}
    assert {dict(labels)["route"] for _, labels, _ in changed} <= {"metrics", "unmatched"}


@pytest.mark.anyio
async def test_every_request_logs_one_line_rejected_ones_included(tmp_path: Path) -> None:
    app = _app(tmp_path, api_key="k")
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    auth = {"authorization": "Bearer k"}
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        with capture_logs() as logs:
            await client.get("/v1/models")  # 401
            await client.get("/v1/models", headers=auth)  # 200
            await client.delete("/v1/responses/resp_nothing", headers=auth)  # 404
            await client.post("/v1/responses", json={"input": "x", "temperature": 9}, headers=auth)  # 400
            await client.post("/v1/responses", json={"input": "x"}, headers=auth)  # a run
    lines = [(e["event"], e.get("status")) for e in logs if e["event"] in ("request", "response")]
    assert lines == [
        ("request", 401),
        ("request", 200),
        ("request", 404),
        ("request", 400),
        ("response", 200),
    ]


CHAT = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
MESSAGES = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "x"}]}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "body"), [("/v1/chat/completions", CHAT), ("/v1/messages", MESSAGES)], ids=["chat", "messages"]
)
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_a_run_of_another_protocol_logs_one_response_line(
    tmp_path: Path, path: str, body: dict[str, Any], stream: bool
) -> None:
    # A run is logged by the run driver whatever protocol projects it; the edge's access
    # line is only for requests no run answered (a refused body, here).
    app = _app(tmp_path, api_key="k")
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    auth = {"authorization": "Bearer k"}
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        with capture_logs() as run_logs:
            answer = await client.post(path, json={**body, "stream": stream}, headers=auth)
        with capture_logs() as refused_logs:
            refused = await client.post(path, json={**body, "messages": "x"}, headers=auth)
    assert answer.status_code == 200 and answer.text
    assert refused.status_code == 400
    assert [(e["event"], e.get("stream")) for e in run_logs if e["event"] in ("request", "response")] == [
        ("response", stream)
    ]
    assert [(e["event"], e.get("status")) for e in refused_logs if e["event"] in ("request", "response")] == [
        ("request", 400)
    ]


def test_a_storm_of_one_message_is_cut_to_a_burst_per_window() -> None:
    now = [0.0]
    storm = StormFilter(burst=3, window=10.0, clock=lambda: now[0])

    def record(msg: str) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, msg, None, None)

    passed = [storm.filter(record("socket.accept() out of system resource")) for _ in range(1000)]
    assert sum(passed) == 3
    assert storm.filter(record("another message"))
    now[0] = 11.0
    later = record("socket.accept() out of system resource")
    assert storm.filter(later)
    assert "997 more like this were not logged" in str(later.msg)
