"""SPEC I12: the count, size and nesting limits refuse a body by name, before it is built."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accord.adapters.build import build_app
from accord.adapters.requests import (
    RequestLimits,
    decode_chat_request,
    decode_messages_request,
    decode_request,
)
from accord.errors import RequestError
from tests.serving import scripted_settings, write_script

LIMITS = RequestLimits(max_content_parts=10, max_schema_bytes=200, max_json_depth=12, max_tools=4)


def _refusal(body: dict[str, Any], limits: RequestLimits = LIMITS) -> RequestError:
    with pytest.raises(RequestError) as caught:
        decode_request(json.dumps(body).encode(), limits)
    return caught.value


def _parts(n: int) -> list[dict[str, str]]:
    return [{"type": "input_text", "text": "p"}] * n


def test_content_parts_over_the_whole_request_are_counted() -> None:
    body = {"input": [{"role": "user", "content": _parts(6)}, {"role": "user", "content": _parts(5)}]}
    err = _refusal(body)
    assert (err.param, err.code) == ("input[1].content", "array_above_max_length")
    decode_request(json.dumps({"input": [{"role": "user", "content": _parts(10)}]}).encode(), LIMITS)


def test_tool_output_parts_count_too() -> None:
    item = {"type": "function_call_output", "call_id": "c", "output": _parts(11)}
    assert _refusal({"input": [item]}).param == "input[0].output"


def _text(n: int) -> list[dict[str, str]]:
    return [{"type": "text", "text": "p"}] * n


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (  # Chat: parts over all messages
            {
                "model": "m",
                "messages": [{"role": "user", "content": _text(6)}, {"role": "user", "content": _text(5)}],
            },
            "messages[1].content",
        ),
        (  # Messages: a tool result's own parts count with the block that holds them
            {
                "model": "m",
                "max_tokens": 4,
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t", "content": _text(10)}],
                    }
                ],
            },
            "messages[0].content",
        ),
        ({"model": "m", "max_tokens": 4, "system": _text(11), "messages": []}, "system"),
        ({"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}] * 5}, "messages"),
    ],
)
def test_chat_and_messages_bodies_are_counted_before_they_are_built(body: dict[str, Any], param: str) -> None:
    """The counts a Responses body gets from its shape pass (SPEC I12), for the other protocols."""
    limits = RequestLimits(max_content_parts=10, max_input_items=4)
    decode = decode_messages_request if "max_tokens" in body else decode_chat_request
    with pytest.raises(RequestError) as caught:
        decode(json.dumps(body).encode(), limits)
    assert (caught.value.param, caught.value.code) == (param, "array_above_max_length")
    assert caught.value.status == 400


def test_chat_and_messages_within_the_counts_are_accepted() -> None:
    limits = RequestLimits(max_content_parts=10, max_input_items=4)
    decode_chat_request(
        json.dumps({"model": "m", "messages": [{"role": "user", "content": _text(10)}]}).encode(), limits
    )
    body = {
        "model": "m",
        "max_tokens": 4,
        "system": _text(4),
        "messages": [{"role": "user", "content": _text(6)}],
    }
    decode_messages_request(json.dumps(body).encode(), limits)


def test_schema_bytes_name_the_tool() -> None:
    big = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(20)}}
    tools = [{"type": "function", "name": "a"}, {"type": "function", "name": "b", "parameters": big}]
    err = _refusal({"input": "x", "tools": tools})
    assert (err.param, err.code) == ("tools[1].parameters", "schema_too_large")
    err = _refusal({"input": "x", "text": {"format": {"type": "json_schema", "name": "n", "schema": big}}})
    assert err.param == "text.format.schema"


def test_namespace_members_and_additional_tools_count_as_tools() -> None:
    fn = {"type": "function", "name": "f"}
    namespace = {"type": "namespace", "name": "ns", "tools": [fn] * 3}
    extra = {"type": "additional_tools", "tools": [fn, fn]}
    err = _refusal({"input": [extra], "tools": [namespace]})
    assert (err.param, err.code) == ("tools", "array_above_max_length")


@given(depth=st.integers(13, 3000))
def test_nesting_past_the_limit_is_a_400_naming_the_place(depth: int) -> None:
    body = b'{"input":"x","metadata":{"k":' + b"[" * depth + b"]" * depth + b"}}"
    with pytest.raises(RequestError) as caught:
        decode_request(body, LIMITS)
    assert caught.value.status == 400


def test_nesting_error_spells_the_path_of_the_deep_node() -> None:
    body = {
        "input": "x",
        "text": {"format": {"type": "json_schema", "name": "n", "schema": {"a": [[[[[[[[[[1]]]]]]]]]]}}},
    }
    err = _refusal(body, RequestLimits(max_json_depth=8))
    assert err.code == "nested_too_deeply"
    assert err.param == "text.format.schema.a[0][0][0][0]"


def test_long_string_deep_inside_is_named() -> None:
    body = {"input": [{"role": "user", "content": [{"type": "input_text", "text": "y" * 50}]}]}
    err = _refusal(body, RequestLimits(max_string_chars=10))
    assert err.param == "input[0].content[0].text"


@pytest.mark.anyio
async def test_large_bodies_decode_in_the_worker_with_their_status_and_param(tmp_path: Path) -> None:
    """Above ``inline_decode_bytes`` the worker process decodes; its answers equal the in-place ones."""
    script = write_script(tmp_path, [{"output": "ok"}])
    app = build_app(scripted_settings(script, inline_decode_bytes=64, max_content_parts=3))
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        ok = await client.post("/v1/responses", json={"input": [{"role": "user", "content": _parts(3)}]})
        refused = await client.post(
            "/v1/responses", json={"input": [{"role": "user", "content": _parts(4)}]}, headers=headers
        )
    assert ok.status_code == 200, ok.text
    assert ok.json()["status"] == "completed"
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "input[0].content"
