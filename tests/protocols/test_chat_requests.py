"""Chat Completions bodies as clients send them -> one Conversation, or a 400 naming the field.

Why: Aider, Continue, LangChain and LiteLLM speak Chat Completions; whatever they send must
reach the template exactly as the same conversation sent through Responses would (the same
turns, developer -> system, results bound to calls by id), and nothing they send may be a 5xx.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.adapters.requests import (
    NormalizeOptions,
    decode_chat_request,
    decode_request,
    normalize,
    normalize_chat,
)
from accord.errors import RequestError
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

part = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image_url", "input_audio", "file", "refusal", "bogus"])},
    optional={
        "text": maybe(text),
        "refusal": maybe(text),
        "image_url": maybe(st.fixed_dictionaries({"url": text})),
        "file": maybe(st.fixed_dictionaries({}, optional={"file_id": text, "filename": text})),
    },
)
content = maybe(st.none() | text | st.lists(part, max_size=3))
tool_call = st.fixed_dictionaries(
    {"id": maybe(call_ids), "type": maybe(st.sampled_from(["function", "custom"]))},
    optional={
        "function": maybe(st.fixed_dictionaries({"name": names, "arguments": text})),
        "custom": maybe(st.fixed_dictionaries({"name": names, "input": text})),
    },
)
loose_message = st.fixed_dictionaries(
    {
        "role": maybe(
            st.sampled_from(["system", "developer", "user", "assistant", "tool", "function", "robot"])
        )
    },
    optional={
        "content": content,
        "tool_calls": maybe(st.lists(tool_call, max_size=2)),
        "tool_call_id": maybe(call_ids),
        "reasoning_content": maybe(text),
        "name": maybe(text),
    },
)
good_parts = st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": text}), max_size=2)
good_call = st.fixed_dictionaries(
    {
        "id": call_ids,
        "type": st.just("function"),
        "function": st.fixed_dictionaries({"name": names, "arguments": text}),
    }
)
valid_message = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "developer", "user"]), "content": text | good_parts}
    ),
    st.fixed_dictionaries(
        {"role": st.just("assistant")},
        optional={
            "content": st.none() | text | good_parts,
            "tool_calls": st.lists(good_call, max_size=2),
            "reasoning_content": text,
        },
    ),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": call_ids, "content": text | good_parts}),
)
message = st.integers(0, 9).flatmap(lambda n: loose_message if n == 0 else valid_message)
tool = st.fixed_dictionaries(
    {"type": maybe(st.sampled_from(["function", "custom", "web_search"]))},
    optional={
        "function": maybe(
            st.fixed_dictionaries({"name": names}, optional={"parameters": st.just({"type": "object"})})
        ),
        "custom": maybe(st.fixed_dictionaries({"name": names})),
    },
)
tool_choice = maybe(
    st.sampled_from(["auto", "none", "required", "any"])
    | st.fixed_dictionaries({"type": st.just("function"), "function": st.fixed_dictionaries({"name": names})})
    | st.fixed_dictionaries(
        {
            "type": st.just("allowed_tools"),
            "allowed_tools": st.fixed_dictionaries(
                {
                    "mode": st.sampled_from(["auto", "required"]),
                    "tools": st.lists(any_json | tool, max_size=2),
                }
            ),
        }
    )
)
request = st.fixed_dictionaries(
    {"messages": maybe(st.lists(message, min_size=1, max_size=6))},
    optional={
        "model": maybe(text),
        "tools": maybe(st.lists(tool, max_size=3)),
        "tool_choice": tool_choice,
        "parallel_tool_calls": maybe(st.booleans()),
        "response_format": maybe(
            st.sampled_from(
                [
                    {"type": "text"},
                    {"type": "json_object"},
                    {"type": "json_schema", "json_schema": {"name": "o", "schema": {"type": "object"}}},
                    {"type": "json_schema", "json_schema": {"name": "bad name!"}},
                ]
            )
        ),
        "max_tokens": maybe(st.integers(0, 10**20)),
        "max_completion_tokens": maybe(st.integers(0, 100)),
        "stop": maybe(st.none() | text | st.lists(text, max_size=5)),
        "temperature": maybe(st.floats(0, 2.1)),
        "top_p": maybe(st.floats(0, 1.1)),
        "seed": maybe(st.integers()),
        "n": maybe(st.integers(0, 2)),
        "stream": maybe(st.booleans()),
        "stream_options": maybe(st.fixed_dictionaries({}, optional={"include_usage": st.booleans()})),
        "reasoning_effort": maybe(st.sampled_from(["none", "low", "high", "extreme"])),
        "logit_bias": any_json,
    },
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=request, vision=st.booleans())
def test_chat_shaped_json_never_raises_anything_but_a_located_400(body: dict[str, Any], vision: bool) -> None:
    try:
        req = decode_chat_request(json.dumps(body).encode(), LIMITS)
        conversation = normalize_chat(req, options=NormalizeOptions(sealer=SEALER, vision=vision))
    except RequestError as exc:
        check_refusal(exc)
        return
    render_all(conversation)


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=64) | any_json.map(lambda v: json.dumps(v).encode()))
def test_arbitrary_bytes_are_a_400_or_a_chat_request(raw: bytes) -> None:
    try:
        decode_chat_request(raw, LIMITS)
    except RequestError as exc:
        assert exc.status == 400 and len(exc.message) <= 4000


def _chat(body: dict[str, Any]) -> Any:
    return normalize_chat(decode_chat_request(json.dumps(body).encode(), LIMITS), options=OPTIONS)


TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def test_a_tool_round_trip_renders_exactly_as_the_same_conversation_through_responses() -> None:
    """Same templates, same turns: the chat spelling and the Responses spelling give one prompt."""
    chat = _chat(
        {
            "messages": [
                {"role": "developer", "content": "Be terse."},
                {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
                {
                    "role": "assistant",
                    "content": "",
                    "reasoning_content": "look it up",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
                        {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "c2", "content": "second"},
                {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "first"}]},
            ],
            "tools": TOOLS,
        }
    )
    responses = normalize(
        decode_request(
            json.dumps(
                {
                    "input": [
                        {"role": "developer", "content": "Be terse."},
                        {"role": "user", "content": [{"type": "input_text", "text": "weather?"}]},
                        {
                            "type": "reasoning",
                            "summary": [],
                            "content": [{"type": "reasoning_text", "text": "look it up"}],
                        },
                        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}'},
                        {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
                        {"type": "function_call_output", "call_id": "c2", "output": "second"},
                        {"type": "function_call_output", "call_id": "c1", "output": "first"},
                    ],
                    "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
                }
            ).encode(),
            LIMITS,
        ),
        options=OPTIONS,
    )
    assert chat.messages == responses.messages
    assert PLAIN.render(chat) == PLAIN.render(responses)
    assert [(m.role, m.tool_call_id, m.name) for m in chat.messages if m.role == "tool"] == [
        ("tool", "c2", "f"),
        ("tool", "c1", "f"),
    ]


def test_sampling_limits_and_formats_reach_the_conversation() -> None:
    conv = _chat(
        {
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 50,
            "max_completion_tokens": 20,
            "stop": ["END", ""],
            "temperature": 0.2,
            "top_p": 0.5,
            "seed": 7,
            "reasoning_effort": "none",
            "parallel_tool_calls": False,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "o", "schema": {"type": "object"}},
            },
        }
    )
    assert (conv.max_output_tokens, conv.stop, conv.temperature, conv.top_p, conv.seed) == (
        20,
        ("END",),
        0.2,
        0.5,
        7,
    )
    assert conv.thinking is False and conv.parallel_tool_calls is False
    assert conv.text_format == {"type": "json_schema", "name": "o", "schema": {"type": "object"}}
    assert _chat({"messages": [{"role": "user", "content": "hi"}], "stop": "X"}).stop == ("X",)
    assert _chat(
        {"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"enable_thinking": True}}
    ).thinking


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": [{"role": "user", "content": "x"}], "n": 2}, "n"),
        ({"messages": []}, "messages"),
        ({}, "messages"),
        ({"messages": [{"role": "function", "name": "f", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user"}]}, "messages[0].content"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id"),
        ({"messages": [{"role": "user", "content": [{"type": "bogus"}]}]}, "messages[0].content[0].type"),
        ({"messages": [{"role": "user", "content": "x"}], "temperature": 3}, "temperature"),
        ({"messages": [{"role": "user", "content": "x"}], "stop": ["a", "b", "c", "d", "e"]}, "stop"),
        (
            {
                "messages": [{"role": "user", "content": "x"}],
                "tool_choice": {"type": "function", "function": {"name": "g"}},
                "tools": TOOLS,
            },
            "tool_choice.function.name",
        ),
        (
            {
                "messages": [{"role": "user", "content": "x"}],
                "tools": TOOLS * 2 + [TOOLS[0] | {"function": {"name": "f", "description": "d"}}],
            },
            "tools[2].function.name",
        ),
        ({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}, "tool_choice"),
        (
            {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "web_search"}]},
            "tools[0].type",
        ),
        ({"messages": [{"role": "system", "content": ""}]}, "messages"),
    ],
)
def test_each_refusal_names_the_chat_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(RequestError) as caught:
        _chat(body)
    assert caught.value.status == 400
    assert caught.value.param == param, caught.value.message
