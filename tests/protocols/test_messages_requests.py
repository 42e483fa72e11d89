"""Anthropic Messages bodies as clients send them -> one Conversation, or a 400 naming the field.

Why: Claude Code and the Anthropic SDKs speak Messages. Their turns must render exactly as
the same conversation through Responses (tool_result bound to tool_use by id, system first),
a thinking block's signature must replay our exact reasoning and a tampered one must be
ignored (SPEC I4), and nothing a client sends may be a 5xx.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.adapters.requests import (
    NormalizeOptions,
    decode_count_tokens_request,
    decode_messages_request,
    decode_request,
    normalize,
    normalize_messages,
)
from accord.errors import RequestError
from accord.events.messages_wire import error_body
from tests.protocols.hostile import (
    LIMITS,
    PLAIN,
    SEALER,
    any_json,
    call_ids,
    check_refusal,
    maybe,
    names,
    render_all,
    text,
)

OPTIONS = NormalizeOptions(sealer=SEALER)
SIGNED = SEALER.seal("the exact reasoning")

text_block = st.fixed_dictionaries({"type": st.just("text"), "text": text})
image_block = st.fixed_dictionaries(
    {
        "type": st.just("image"),
        "source": st.sampled_from(
            [
                {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                {"type": "url", "url": "https://example.com/a.png"},
                {"type": "file", "file_id": "file_1"},
                {"type": "bogus"},
            ]
        ),
    }
)
user_block = st.one_of(
    text_block,
    image_block,
    st.fixed_dictionaries(
        {"type": st.just("tool_result"), "tool_use_id": call_ids},
        optional={
            "content": st.none() | text | st.lists(text_block | image_block, max_size=2),
            "is_error": st.booleans(),
        },
    ),
)
assistant_block = st.one_of(
    text_block,
    st.fixed_dictionaries(
        {
            "type": st.just("tool_use"),
            "id": call_ids,
            "name": names,
            "input": st.dictionaries(st.text(max_size=3), any_json, max_size=2),
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("thinking"), "thinking": text, "signature": text | st.just(SIGNED)}
    ),
    st.fixed_dictionaries({"type": st.just("redacted_thinking"), "data": text | st.just(SIGNED)}),
)
loose_block = st.fixed_dictionaries(
    {
        "type": maybe(
            st.sampled_from(
                ["text", "image", "tool_use", "tool_result", "thinking", "document", "server_tool_use"]
            )
        )
    },
    optional={
        "text": maybe(text),
        "id": maybe(call_ids),
        "input": any_json,
        "tool_use_id": maybe(call_ids),
        "signature": maybe(text),
    },
)
valid_message = st.one_of(
    st.fixed_dictionaries(
        {"role": st.just("user"), "content": text | st.lists(user_block, min_size=1, max_size=3)}
    ),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": text | st.lists(assistant_block, min_size=1, max_size=3)}
    ),
)
loose_message = st.fixed_dictionaries(
    {"role": maybe(st.sampled_from(["user", "assistant", "system"]))},
    optional={"content": maybe(text | st.lists(loose_block | user_block | assistant_block, max_size=3))},
)
message = st.integers(0, 9).flatmap(lambda n: loose_message if n == 0 else valid_message)
tool = st.fixed_dictionaries(
    {"name": maybe(names)},
    optional={
        "type": maybe(st.sampled_from(["custom", "web_search_20250305", "bash_20250124"])),
        "input_schema": maybe(st.just({"type": "object"})),
        "description": maybe(text),
        "cache_control": st.just({"type": "ephemeral"}),
    },
)
request = st.fixed_dictionaries(
    {
        "model": maybe(st.just("claude-sonnet-4-5")),
        "max_tokens": maybe(st.integers(1, 10**6) | st.just(0)),
        "messages": maybe(st.lists(message, min_size=1, max_size=5)),
    },
    optional={
        "system": maybe(text | st.lists(text_block, max_size=2)),
        "tools": maybe(st.lists(tool, max_size=3)),
        "tool_choice": maybe(
            st.sampled_from(
                [
                    {"type": "auto"},
                    {"type": "any"},
                    {"type": "none"},
                    {"type": "tool", "name": "Bash"},
                    {"type": "x"},
                ]
            )
        ),
        "thinking": maybe(
            st.sampled_from(
                [{"type": "enabled", "budget_tokens": 2048}, {"type": "disabled"}, {"type": "enabled"}]
            )
        ),
        "stop_sequences": maybe(st.lists(text, max_size=3)),
        "temperature": maybe(st.floats(0, 1.2)),
        "top_p": maybe(st.floats(0, 1.1)),
        "top_k": maybe(st.integers(-1, 50)),
        "metadata": maybe(st.fixed_dictionaries({}, optional={"user_id": text})),
        "stream": maybe(st.booleans()),
        "context_management": any_json,
    },
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=request, vision=st.booleans(), drop=st.booleans())
def test_messages_shaped_json_never_raises_anything_but_a_located_400(
    body: dict[str, Any], vision: bool, drop: bool
) -> None:
    options = NormalizeOptions(sealer=SEALER, vision=vision, web_search="drop" if drop else "refuse")
    try:
        conversation = normalize_messages(
            decode_messages_request(json.dumps(body).encode(), LIMITS), options=options
        )
    except RequestError as exc:
        check_refusal(exc)
        assert error_body(exc.message, status=exc.status)["error"]["type"] == "invalid_request_error"
        return
    render_all(conversation)


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=64) | any_json.map(lambda v: json.dumps(v).encode()))
def test_arbitrary_bytes_are_a_400_or_a_messages_request(raw: bytes) -> None:
    for decode in (decode_messages_request, decode_count_tokens_request):
        try:
            decode(raw, LIMITS)
        except RequestError as exc:
            assert exc.status == 400 and len(exc.message) <= 4000


def _messages(body: dict[str, Any]) -> Any:
    full = {"model": "m", "max_tokens": 100} | body
    return normalize_messages(decode_messages_request(json.dumps(full).encode(), LIMITS), options=OPTIONS)


def _turn(thinking: str, signature: str) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": thinking, "signature": signature},
                    {"type": "text", "text": "Running ls."},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "a.txt"}],
                    },
                    {"type": "text", "text": "and now?"},
                ],
            },
        ],
        "system": [
            {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}
        ],
        "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
    }


def test_a_signed_thinking_block_replays_the_exact_reasoning_whatever_its_text_says() -> None:
    conv = _messages(_turn("an edited summary", SIGNED))
    assistant = [m for m in conv.messages if m.role == "assistant"]
    assert [m.reasoning for m in assistant] == ["the exact reasoning"]
    assert conv.include_encrypted_reasoning, "every thinking block we send must carry its signature"


@pytest.mark.parametrize("signature", ["", "forged", SIGNED[:-4] + "AAAA", SEALER.seal("x")[::-1]])
def test_a_thinking_block_whose_signature_we_did_not_seal_is_ignored(signature: str) -> None:
    conv = _messages(_turn("trust me", signature))
    assert all(m.reasoning is None for m in conv.messages)
    assert "trust me" not in PLAIN.render(conv)


def test_a_tool_round_trip_renders_exactly_as_the_same_conversation_through_responses() -> None:
    conv = _messages(_turn("x", SIGNED))
    responses = normalize(
        decode_request(
            json.dumps(
                {
                    "instructions": "You are a coding agent.",
                    "input": [
                        {"role": "user", "content": "list files"},
                        {"type": "reasoning", "summary": [], "encrypted_content": SIGNED},
                        {"role": "assistant", "content": [{"type": "output_text", "text": "Running ls."}]},
                        {
                            "type": "function_call",
                            "call_id": "toolu_1",
                            "name": "Bash",
                            "arguments": '{"command": "ls"}',
                        },
                        {
                            "type": "function_call_output",
                            "call_id": "toolu_1",
                            "output": [{"type": "input_text", "text": "a.txt"}],
                        },
                        {"role": "user", "content": "and now?"},
                    ],
                    "tools": [
                        {
                            "type": "function",
                            "name": "Bash",
                            "description": "run",
                            "parameters": {"type": "object"},
                        }
                    ],
                }
            ).encode(),
            LIMITS,
        ),
        options=OPTIONS,
    )
    assert conv.messages == responses.messages
    assert conv.tools == responses.tools
    assert PLAIN.render(conv) == PLAIN.render(responses)


def test_sampling_thinking_and_tool_choice_reach_the_conversation() -> None:
    conv = _messages(
        {
            "messages": [{"role": "user", "content": "hi"}],
            "stop_sequences": ["\n\nHuman:"],
            "temperature": 0.3,
            "top_k": 20,
            "thinking": {"type": "enabled", "budget_tokens": 4000},
            "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        }
    )
    assert (conv.max_output_tokens, conv.stop, conv.temperature, conv.top_k) == (
        100,
        ("\n\nHuman:",),
        0.3,
        20,
    )
    assert conv.thinking is True and conv.tool_choice == "required" and conv.parallel_tool_calls is False
    assert (
        _messages({"messages": [{"role": "user", "content": "x"}], "thinking": {"type": "disabled"}}).thinking
        is False
    )
    tool = _messages(
        {
            "messages": [{"role": "user", "content": "x"}],
            "tools": [{"name": "Bash", "input_schema": {}}],
            "tool_choice": {"type": "tool", "name": "Bash"},
        }
    )
    assert tool.tool_choice == "Bash"


def test_count_tokens_takes_the_same_conversation_without_max_tokens() -> None:
    body = _turn("x", SIGNED) | {"model": "m"}
    counted = normalize_messages(
        decode_count_tokens_request(json.dumps(body).encode(), LIMITS), options=OPTIONS
    )
    assert counted.messages == _messages(_turn("x", SIGNED)).messages


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": [{"role": "user", "content": "x"}], "max_tokens": None}, "max_tokens"),
        ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, "max_tokens"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "system", "content": "x"}]}, "messages"),
        ({"messages": [{"role": "user", "content": []}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": ""}]}, "messages[0].content"),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "b", "input": {}}]}
                ]
            },
            "messages[0].content[0].type",
        ),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "a"}]}]},
            "messages[0].content[0].type",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "server_tool_use"}]}]},
            "messages[0].content[0].type",
        ),
        (
            {
                "messages": [{"role": "user", "content": "x"}],
                "tools": [{"name": "s", "type": "web_search_20250305"}],
            },
            "tools[0].type",
        ),
        ({"messages": [{"role": "user", "content": "x"}], "tools": [{"name": "s"}]}, "tools[0].input_schema"),
        ({"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "any"}}, "tool_choice"),
        (
            {"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "tool", "name": "nope"}},
            "tool_choice.name",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "thinking": {"type": "enabled"}},
            "thinking.budget_tokens",
        ),
        ({"messages": [{"role": "user", "content": "x"}], "temperature": 1.5}, "temperature"),
        ({"messages": [], "system": "s"}, "messages"),
    ],
)
def test_each_refusal_names_the_messages_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(RequestError) as caught:
        _messages(body)
    assert caught.value.status == 400
    assert caught.value.param == param, caught.value.message


@pytest.mark.parametrize("missing", ["model", "max_tokens", "messages"])
def test_a_missing_required_top_level_field_is_named(missing: str) -> None:
    body = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]}
    del body[missing]
    with pytest.raises(RequestError) as caught:
        decode_messages_request(json.dumps(body).encode(), LIMITS)
    assert caught.value.param == missing


def test_refusals_take_anthropics_error_shape() -> None:
    assert error_body("bad", status=400) == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "bad"},
    }
    assert error_body("busy", status=529)["error"]["type"] == "overloaded_error"


def test_a_system_turn_inside_messages_is_system_context_not_the_last_input() -> None:
    """Claude Code 2.1 sends its environment notes as a ``system`` turn after the user's."""
    conversation = _messages(
        {
            "system": "You are terse.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "list files"}]},
                {"role": "system", "content": [{"type": "text", "text": "# Environment\ncwd: /x"}]},
            ],
        }
    )
    assert [m.role for m in conversation.messages].count("system") >= 1
    assert any("cwd: /x" in m.text for m in conversation.messages if m.role == "system")
    assert conversation.last_input == "list files" and conversation.last_item_type == "message"
    with pytest.raises(RequestError) as refused:
        _messages(
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {
                        "role": "system",
                        "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}],
                    },
                ]
            }
        )
    assert refused.value.param == "messages[1].content[0].type"
