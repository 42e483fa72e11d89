"""normalize: what every client sends becomes the chat the template renders (SPEC I1-I10)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from accord.adapters.requests import (
    IMAGE_PLACEHOLDER,
    Conversation,
    ImagePart,
    NormalizeOptions,
    RequestLimits,
    TextPart,
    decode_request,
    normalize,
    referenced_ids,
)
from accord.errors import RequestError

WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
PNG = "data:image/png;base64,iVBORw0KGgo="


def conv_of(body: dict[str, Any], history: tuple[dict[str, Any], ...] = (), **options: Any) -> Conversation:
    req = decode_request(json.dumps(body).encode(), RequestLimits())
    return normalize(req, history=history, options=NormalizeOptions(**options))


def refused(body: dict[str, Any], **options: Any) -> RequestError:
    with pytest.raises(RequestError) as info:
        conv_of(body, **options)
    assert info.value.param, "every refusal names the JSON path"
    return info.value


def call(call_id: str, name: str = "get_weather", args: str = '{"city": "Paris"}') -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": args}


def output(call_id: str, out: Any = "sunny") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": out}


def test_string_input_is_one_user_message_and_instructions_come_first() -> None:
    conv = conv_of({"input": "hi", "instructions": "Be brief"})
    assert [(m.role, m.text) for m in conv.messages] == [("system", "Be brief"), ("user", "hi")]
    assert conv.input_items == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    ]
    assert (conv.last_input, conv.last_item_type) == ("hi", "message")


def test_developer_role_is_kept_for_the_template_to_decide() -> None:
    """SPEC I5 is decided per template by the renderer's probe, not here."""
    conv = conv_of({"input": [{"role": "developer", "content": "rules"}, {"role": "user", "content": "go"}]})
    assert [m.role for m in conv.messages] == ["developer", "user"]


def test_consecutive_calls_fold_into_one_assistant_turn_bound_by_id() -> None:
    """SPEC I8: two calls then two results render as one turn with two calls, results by id."""
    body = {
        "input": [
            {"role": "user", "content": "two cities"},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "both"}]},
            call("c1", args='{"city": "Paris"}'),
            call("c2", args='{"city": "Rome"}'),
            output("c2", "warm"),
            output("c1", "mild"),
        ],
        "tools": [WEATHER],
    }
    conv = conv_of(body)
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "tool"]
    turn = conv.messages[1]
    assert [c.id for c in turn.tool_calls] == ["c1", "c2"] and turn.reasoning == "both"
    assert [(m.tool_call_id, m.name, m.text) for m in conv.messages[2:]] == [
        ("c2", "get_weather", "warm"),
        ("c1", "get_weather", "mild"),
    ]
    assert conv.last_item_type == "function_call_output" and conv.last_input == "mild"


def test_reasoning_and_text_and_calls_of_one_response_are_one_turn() -> None:
    body = {
        "input": [
            {"role": "user", "content": "q"},
            {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "think"}], "summary": []},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking."}],
            },
            call("c1"),
        ]
    }
    (turn,) = conv_of(body).messages[1:]
    assert (turn.reasoning, turn.text, len(turn.tool_calls)) == ("think", "Checking.", 1)


def test_custom_tool_call_is_a_call_with_one_input_argument() -> None:
    """SPEC P10: the model was offered apply_patch as a function of one string ``input``."""
    patch = "*** Begin Patch\n*** End Patch\n"
    body = {
        "input": [
            {"role": "user", "content": "edit"},
            {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": patch},
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done"},
        ],
        "tools": [{"type": "custom", "name": "apply_patch", "format": {"type": "text"}}],
    }
    conv = conv_of(body)
    (ref,) = conv.messages[1].tool_calls
    assert (ref.name, ref.kind, json.loads(ref.arguments)) == ("apply_patch", "custom", {"input": patch})
    (spec,) = conv.tools
    assert spec.kind == "custom" and spec.parameters is not None
    assert spec.parameters["required"] == ["input"]
    assert conv.last_item_type == "custom_tool_call_output"


def test_grammar_of_a_custom_tool_reaches_the_model() -> None:
    tool = {
        "type": "custom",
        "name": "math",
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: NUMBER"},
    }
    (spec,) = conv_of({"input": "x", "tools": [tool]}).tools
    assert spec.parameters is not None
    assert "start: NUMBER" in spec.parameters["properties"]["input"]["description"]


def test_namespace_tools_are_flattened_and_calls_carry_the_namespace() -> None:
    ns = {
        "type": "namespace",
        "name": "crm",
        "description": "CRM",
        "tools": [{"type": "function", "name": "lookup"}],
    }
    body = {
        "input": [
            {"role": "user", "content": "x"},
            {**call("c1", "lookup", "{}"), "namespace": "crm"},
            output("c1"),
        ],
        "tools": [ns],
    }
    conv = conv_of(body)
    assert [(t.name, t.namespace, t.bare_name) for t in conv.tools] == [("crm.lookup", "crm", "lookup")]
    assert conv.messages[1].tool_calls[0].name == "crm.lookup"
    assert conv.messages[2].name == "crm.lookup"


def test_tool_output_part_list_is_translated_not_flattened() -> None:
    """SPEC I2 + I9: text parts stay text; an image is a placeholder for a text-only model."""
    parts = [
        {"type": "input_text", "text": "see"},
        {"type": "input_image", "image_url": PNG, "detail": "auto"},
    ]
    body = {"input": [{"role": "user", "content": "x"}, call("c1"), output("c1", parts)]}
    text_only = conv_of(body).messages[-1]
    assert text_only.content == (TextPart(text="see"), TextPart(text=IMAGE_PLACEHOLDER))
    vision = conv_of(body, vision=True).messages[-1]
    assert vision.content == (TextPart(text="see"), ImagePart(url=PNG, detail="auto"))


def test_images_in_messages_become_placeholders_for_text_only_models() -> None:
    body = {
        "input": [{"role": "user", "content": [{"type": "input_image", "image_url": PNG, "detail": "low"}]}]
    }
    assert conv_of(body).messages[0].content == (TextPart(text=IMAGE_PLACEHOLDER),)


def test_empty_message_is_a_400_naming_it() -> None:
    """SPEC I3: an empty message's text lives nowhere else."""
    assert refused({"input": [{"role": "user", "content": "ok"}, {"role": "user", "content": []}]}).param == (
        "input[1].content"
    )


def test_reasoning_with_null_content_falls_back_to_summary_and_empty_is_skipped() -> None:
    body = {
        "input": [
            {"role": "user", "content": "q"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "content": None},
            {
                "type": "reasoning",
                "id": "rs_2",
                "summary": [{"type": "summary_text", "text": "digest"}],
                "content": None,
            },
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A"}]},
        ]
    }
    assert conv_of(body).messages[1].reasoning == "digest"


def test_encrypted_content_part_with_readable_text_is_read_and_ciphertext_is_dropped() -> None:
    """SPEC I3: agent clients carry sub-agent payloads in such parts; real ciphertext means nothing."""
    readable = "Task: summarise the repository layout and report back."
    cipher = "gAAAAABn3Xk9QwZ0rT5yL2mN8pQ4sV7uW1xY3zA6bC9dE2fG5hJ8kL1mN4oP7qR0sT3uV6wX9yZ2aB5cD8eF1gH4"
    parts = [{"type": "encrypted_content", "encrypted_content": readable}]
    body = {
        "input": [
            {"role": "user", "content": [*parts, {"type": "encrypted_content", "encrypted_content": cipher}]}
        ]
    }
    assert conv_of(body).messages[0].text == readable


def test_item_reference_is_resolved_or_refused_naming_it() -> None:
    body = {"input": [{"role": "user", "content": "x"}, {"type": "item_reference", "id": "msg_9"}]}
    req = decode_request(json.dumps(body).encode(), RequestLimits())
    assert referenced_ids(req) == ["msg_9"]
    stored = {
        "type": "message",
        "role": "assistant",
        "id": "msg_9",
        "content": [{"type": "output_text", "text": "hey"}],
    }
    conv = normalize(req, options=NormalizeOptions(references={"msg_9": stored}))
    assert conv.messages[-1].text == "hey"
    err = refused(body)
    assert err.param == "input[1].id" and "msg_9" in err.message


def test_additional_tools_are_hoisted_into_tools_and_removed_from_input() -> None:
    """SPEC I6."""
    body = {
        "input": [
            {"role": "user", "content": "x"},
            {"type": "additional_tools", "role": "developer", "tools": [WEATHER]},
        ]
    }
    conv = conv_of(body)
    assert [t.name for t in conv.tools] == ["get_weather"]
    assert [i["type"] for i in conv.input_items] == ["message"]
    assert conv.last_item_type == "message"


def test_tool_search_is_offered_as_a_function_and_its_output_hoists_tools() -> None:
    search = {"type": "tool_search", "execution": "client", "description": "find tools"}
    body = {
        "input": [
            {"role": "user", "content": "x"},
            {
                "type": "tool_search_call",
                "call_id": "ts1",
                "arguments": {"query": "weather"},
                "execution": "client",
            },
            {"type": "tool_search_output", "call_id": "ts1", "execution": "client", "tools": [WEATHER]},
        ],
        "tools": [search],
    }
    conv = conv_of(body)
    assert [t.name for t in conv.tools] == ["tool_search", "get_weather"]
    assert conv.messages[1].tool_calls[0].name == "tool_search"
    assert "get_weather" in conv.messages[2].text


def test_server_executed_tool_search_is_refused() -> None:
    assert (
        refused({"input": "x", "tools": [{"type": "tool_search", "execution": "server"}]}).param
        == "tools[0].execution"
    )


@pytest.mark.parametrize("kind", ["web_search", "web_search_preview", "web_search_2025_08_26"])
def test_web_search_policy(kind: str) -> None:
    """SPEC I7: refused with how to turn it off; dropped without external access or under --web-search=drop."""
    live = {"input": "x", "tools": [WEATHER, {"type": kind}]}
    err = refused(live)
    assert err.param == "tools[1].type" and 'web_search = "disabled"' in err.message
    assert [t.name for t in conv_of(live, web_search="drop").tools] == ["get_weather"]
    offline = {"input": "x", "tools": [{"type": kind, "external_web_access": False}]}
    assert conv_of(offline).tools == ()


def test_duplicate_tool_names_are_refused() -> None:
    assert (
        refused({"input": "x", "tools": [WEATHER, {**WEATHER, "description": "other"}]}).param
        == "tools[1].name"
    )


def test_tool_choice_forms() -> None:
    ns = {"type": "namespace", "name": "crm", "tools": [{"type": "function", "name": "lookup"}]}
    base = {"input": "x", "tools": [WEATHER, ns]}
    assert conv_of({**base, "tool_choice": "required"}).tool_choice == "required"
    assert (
        conv_of({**base, "tool_choice": {"type": "function", "name": "get_weather"}}).tool_choice
        == "get_weather"
    )
    assert (
        conv_of({**base, "tool_choice": {"type": "function", "name": "lookup"}}).tool_choice == "crm.lookup"
    )
    allowed = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "get_weather"}],
    }
    conv = conv_of({**base, "tool_choice": allowed})
    assert conv.tool_choice == "required" and [t.name for t in conv.tools] == ["get_weather"]
    assert refused({**base, "tool_choice": {"type": "function", "name": "nope"}}).param == "tool_choice.name"
    assert refused({"input": "x", "tool_choice": "required"}).param == "tool_choice"


def test_options_are_carried() -> None:
    body = {
        "input": "x",
        "reasoning": {"effort": "none"},
        "max_output_tokens": 64,
        "temperature": 0.2,
        "top_p": 0.9,
        "parallel_tool_calls": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "k",
        "text": {"format": {"type": "json_schema", "name": "o", "schema": {"type": "object"}}},
    }
    conv = conv_of(body)
    assert (conv.thinking, conv.max_output_tokens, conv.temperature, conv.top_p) == (False, 64, 0.2, 0.9)
    assert conv.parallel_tool_calls is False and conv.include_encrypted_reasoning
    assert conv.prompt_cache_key == "k"
    assert conv.text_format == {
        "type": "json_schema",
        "name": "o",
        "schema": {"type": "object"},
        "strict": None,
        "description": None,
    }
    assert conv_of({"input": "x", "reasoning": {"effort": "high"}}).thinking is True
    assert conv_of({"input": "x"}).thinking is None


def test_history_is_prepended_and_instructions_are_not_carried() -> None:
    history = (
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "first"}]},
        {
            "type": "reasoning",
            "id": "rs",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "hmm"}],
        },
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "get_weather",
            "arguments": "{}",
            "id": "fc",
            "status": "completed",
        },
    )
    conv = conv_of({"input": [output("c1")], "instructions": "now"}, history=history)
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool"]
    assert conv.messages[2].reasoning == "hmm" and conv.messages[3].name == "get_weather"
    assert [i["type"] for i in conv.input_items] == ["function_call_output"]


def test_unreadable_history_is_a_400_naming_previous_response_id() -> None:
    with pytest.raises(RequestError) as info:
        conv_of({"input": "x"}, history=({"type": "hologram"},))
    assert info.value.param == "previous_response_id"


def test_prompt_templates_and_conversation_with_previous_response_are_refused() -> None:
    assert refused({"input": "x", "prompt": {"id": "pmpt_1"}}).param == "prompt"
    assert refused({"input": "x", "conversation": "conv_1", "previous_response_id": "resp_1"}).param == (
        "previous_response_id"
    )


def test_no_input_at_all_is_refused() -> None:
    assert refused({}).param == "input"
