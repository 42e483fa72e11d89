"""response_echo: the request fields a Response repeats parse with the openai SDK's own model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import Response
from request_helpers import FIXTURES

from accord.adapters.requests import RequestLimits, decode_request, response_echo


def _response(echo: dict[str, Any]) -> Response:
    body = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1.0,
        "model": "m",
        "output": [],
        "status": "completed",
    }
    return Response.model_validate({**body, **echo})


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_echo_of_every_fixture_parses_as_an_sdk_response(path: Any) -> None:
    body = json.dumps(json.loads(path.read_text())["body"]).encode()
    echo = response_echo(decode_request(body, RequestLimits()))
    response = _response(echo)
    assert response.tools is not None and response.parallel_tool_calls in (True, False)


def test_echo_defaults_match_openai() -> None:
    echo = response_echo(decode_request(b'{"input": "x"}', RequestLimits()))
    assert echo["text"]["format"] == {"type": "text"} and echo["metadata"] == {}
    assert (echo["tool_choice"], echo["store"], echo["truncation"]) == ("auto", True, "disabled")


def test_echo_keeps_the_schema_key_of_text_format() -> None:
    """SPEC I10: ``schema`` in both directions."""
    fmt = {"type": "json_schema", "name": "out", "schema": {"type": "object"}, "strict": True}
    echo = response_echo(
        decode_request(json.dumps({"input": "x", "text": {"format": fmt}}).encode(), RequestLimits())
    )
    assert echo["text"]["format"]["schema"] == {"type": "object"}
    assert _response(echo).text is not None
