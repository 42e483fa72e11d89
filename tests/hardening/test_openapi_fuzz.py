"""schemathesis over ``/openapi.json`` against a live server: no 5xx, and every answer as documented.

The document must describe every operation (bodies, query parameters, security, answers)
for this to mean anything; the examples are bounded so the run fits in CI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.serving import running, scripted_settings, write_script

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.mark.slow
def test_no_operation_answers_5xx_or_off_schema(tmp_path: Path) -> None:
    with running(
        scripted_settings(write_script(tmp_path, [{"output": "ok"}]), max_body_bytes=200_000)
    ) as srv:
        schema = schemathesis.openapi.from_url(srv.base_url + "/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 10
        for operation in operations:

            @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
            @given(case=operation.as_strategy())
            def check(case: schemathesis.Case) -> None:
                case.call_and_validate(base_url=srv.base_url, checks=CHECKS)

            check()
        statuses = sorted({status for (_route, status, _cause) in srv.app.metrics.requests})
        calls = sum(srv.app.metrics.requests.values())
    print(f"\n{len(operations)} operations, {calls} counted calls, statuses {statuses}")
    assert calls >= 5 * len(operations)
    assert all(not status.startswith("5") for status in statuses)


STREAMED: dict[str, Any] = {
    "/v1/responses": {"model": "m", "stream": True, "input": "hi"},
    "/v1/chat/completions": {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
    "/v1/messages": {
        "model": "m",
        "max_tokens": 16,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    },
    "/v1/completions": {"model": "m", "stream": True, "prompt": "hi"},
}


@pytest.mark.parametrize("path", sorted(STREAMED))
def test_every_streamed_event_matches_the_documented_item(tmp_path: Path, path: str) -> None:
    """Random bodies seldom stream; these do, so each stream's events are checked against the document
    (OpenAPI 3.2 ``itemSchema``: each SSE event's ``data`` is JSON of the protocol's event union)."""
    with running(scripted_settings(write_script(tmp_path, [{"output": "ok"}]))) as srv:
        schema = schemathesis.openapi.from_url(srv.base_url + "/openapi.json")
        case = schema[path]["POST"].Case(body=STREAMED[path], media_type="application/json")
        response = case.call_and_validate(base_url=srv.base_url, checks=CHECKS)
        assert response.headers["content-type"][0].startswith("text/event-stream")
