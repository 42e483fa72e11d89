"""decode_request: any bytes give a ResponsesRequest or a 400 that names the JSON path (SPEC I11, I12)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from accord.adapters.requests import RequestLimits, ResponsesRequest, decode_request
from accord.adapters.requests._wire import FormatJsonSchema, FunctionCall, ItemReference, Message
from accord.errors import RequestError

LIMITS = RequestLimits()


def decode(body: Any, limits: RequestLimits = LIMITS) -> ResponsesRequest:
    return decode_request(json.dumps(body).encode(), limits)


def refused(body: Any, limits: RequestLimits = LIMITS) -> RequestError:
    with pytest.raises(RequestError) as info:
        decode(body, limits) if not isinstance(body, bytes) else decode_request(body, limits)
    assert info.value.status == 400
    assert len(info.value.message) <= 4000
    return info.value


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b"\xff\xfe", b'{"input": "\xff"}', b"[1, 2]", b"null", b'"text"', b"[" * 100_000],
)
def test_bytes_that_are_not_a_json_object_are_a_400(raw: bytes) -> None:
    """Broken JSON, broken UTF-8, deep nesting and non-objects are the client's fault, never a 500."""
    assert refused(raw).status == 400


def test_unknown_top_level_fields_are_ignored() -> None:
    """Codex adds client_metadata; clients add fields faster than servers learn them."""
    req = decode({"input": "hi", "client_metadata": {"a": 1}, "some_future_field": [1]})
    assert req.input == "hi"


def test_wrong_type_names_the_path() -> None:
    err = refused({"input": [{"role": "user", "content": [{"type": "input_text", "text": 5}]}]})
    assert err.param == "input[0].content[0].text"


def test_missing_required_field_names_the_field() -> None:
    err = refused({"input": [{"type": "function_call_output", "output": "x"}]})
    assert err.param == "input[0].call_id"


def test_unknown_content_part_type_names_the_part() -> None:
    err = refused({"input": [{"role": "user", "content": [{"type": "input_video", "url": "x"}]}]})
    assert err.param == "input[0].content[0].type"


def test_unknown_role_is_a_400_naming_the_role() -> None:
    assert refused({"input": [{"role": "wizard", "content": "x"}]}).param == "input[0].role"


def test_untyped_items_get_their_tag() -> None:
    """Easy messages and item references arrive without ``type`` (docs/spec.md A8)."""
    req = decode({"input": [{"role": "user", "content": "hi"}, {"id": "msg_1"}]})
    assert isinstance(req.input, list)
    assert isinstance(req.input[0], Message) and req.input[0].content == "hi"
    assert isinstance(req.input[1], ItemReference)


def test_item_without_type_or_role_is_a_400() -> None:
    assert refused({"input": [{"content": "x"}]}).param == "input[0].type"


def test_typed_message_may_carry_string_content() -> None:
    req = decode({"input": [{"type": "message", "role": "user", "content": "hello"}]})
    assert isinstance(req.input, list) and isinstance(req.input[0], Message)
    assert req.input[0].content == "hello"


@pytest.mark.parametrize("kind", ["shell_call", "computer_call", "mcp_call", "image_generation_call"])
def test_hosted_tool_items_are_refused_by_name(kind: str) -> None:
    err = refused({"input": [{"type": kind, "id": "x", "call_id": "c"}]})
    assert err.param == "input[0].type" and kind in err.message


def test_unknown_item_type_is_refused() -> None:
    assert refused({"input": [{"type": "hologram"}]}).param == "input[0].type"


@pytest.mark.parametrize(
    "kind", ["file_search", "mcp", "code_interpreter", "image_generation", "computer_use_preview"]
)
def test_hosted_tools_are_refused_naming_the_tool(kind: str) -> None:
    err = refused({"input": "hi", "tools": [{"type": "function", "name": "f"}, {"type": kind}]})
    assert err.param == "tools[1].type"


def test_hosted_tool_choice_is_refused() -> None:
    assert refused({"input": "hi", "tool_choice": {"type": "file_search"}}).param == "tool_choice.type"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", 3),
        ("top_p", -0.1),
        ("max_output_tokens", 0),
        ("top_logprobs", 21),
        ("truncation", "yes"),
    ],
)
def test_out_of_range_values_name_their_field(field: str, value: Any) -> None:
    assert refused({"input": "hi", field: value}).param == field


def test_metadata_is_bounded() -> None:
    err = refused({"input": "hi", "metadata": {str(i): "v" for i in range(17)}})
    assert err.param == "metadata"


def test_json_schema_format_keeps_the_schema_key() -> None:
    """SPEC I10: the key is ``schema``, flat in ``format``."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    req = decode(
        {"input": "hi", "text": {"format": {"type": "json_schema", "name": "out", "schema": schema}}}
    )
    assert req.text is not None and isinstance(req.text.format, FormatJsonSchema)
    assert req.text.format.schema == schema


def test_json_schema_name_is_validated() -> None:
    err = refused({"input": "hi", "text": {"format": {"type": "json_schema", "name": "a b", "schema": {}}}})
    assert err.param == "text.format.name"


def test_too_many_input_items_is_a_400() -> None:
    err = refused({"input": [{"role": "user", "content": "x"}] * 4}, RequestLimits(max_input_items=3))
    assert err.param == "input"


def test_tool_count_includes_namespace_members_and_hoisted_tools() -> None:
    fn = {"type": "function", "name": "f"}
    body = {
        "input": [{"type": "additional_tools", "role": "developer", "tools": [fn]}],
        "tools": [{"type": "namespace", "name": "ns", "tools": [fn, fn]}],
    }
    assert refused(body, RequestLimits(max_tools=2)).param == "tools"
    decode(body, RequestLimits(max_tools=3))


def test_an_overlong_string_is_refused_naming_it_and_the_message_stays_short() -> None:
    """A rejected base64 image must not flood the client (SPEC I11)."""
    image = "data:image/png;base64," + "A" * 10_000
    body = {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": image}]}]}
    err = refused(body, RequestLimits(max_string_chars=1000))
    assert err.param == "input[0].content[0].image_url"
    assert "AAAA" not in err.message


def test_validation_message_with_a_huge_value_is_capped() -> None:
    err = refused({"input": "hi", "truncation": "x" * 100_000})
    assert len(err.message) <= 4000


def test_function_call_history_decodes() -> None:
    req = decode({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]})
    assert isinstance(req.input, list) and isinstance(req.input[0], FunctionCall)


def test_chat_completions_text_parts_are_read_as_input_text_in_messages_and_tool_outputs() -> None:
    req = decode(
        {
            "input": [
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"type": "function_call_output", "call_id": "c", "output": [{"type": "text", "text": "ok"}]},
            ]
        }
    )
    assert isinstance(req.input, list) and len(req.input) == 2


def test_tool_output_part_without_type_names_its_path() -> None:
    err = refused({"input": [{"type": "function_call_output", "call_id": "c", "output": [{"text": "x"}]}]})
    assert err.param == "input[0].output[0].type"
