"""Rendering through real chat templates: the prompt is the one the model was trained on.

Qwen3 and DeepSeek-V3 templates come from the packages that ship them (conftest.py), the
ChatML one from the SmolLM2 GGUF; the GLM-style template is written here (glm_style.jinja).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from accord.adapters.requests import (
    Conversation,
    NormalizeOptions,
    RequestLimits,
    Sealer,
    decode_request,
    normalize,
)
from accord.adapters.templates import PromptRenderer, resolve_profile

FIXTURES = Path(__file__).parent.parent / "fixtures" / "requests"
GLM_TEMPLATE = Path(__file__).parent / "glm_style.jinja"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
}


def conv_of(body: dict[str, Any], **options: Any) -> Conversation:
    req = decode_request(json.dumps(body).encode(), RequestLimits())
    return normalize(req, options=NormalizeOptions(**options))


def fixture_conv(name: str) -> Conversation:
    body = json.loads((FIXTURES / f"{name}.json").read_text())["body"]
    return conv_of(body, web_search="drop")


def two_calls(first_out: str = "mild", second_out: str = "warm") -> dict[str, Any]:
    return {
        "input": [
            {"role": "developer", "content": "Answer in one line."},
            {"role": "user", "content": "Paris and Rome?"},
            {
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "Need both cities."}],
            },
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get_weather",
                "arguments": '{"city":"Paris"}',
            },
            {
                "type": "function_call",
                "call_id": "c2",
                "name": "get_weather",
                "arguments": '{"city": "Rome", "days": 2}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": first_out},
            {"type": "function_call_output", "call_id": "c2", "output": second_out},
        ],
        "tools": [WEATHER],
    }


# --- Qwen3 -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def qwen3(qwen3_config: Path) -> PromptRenderer:
    return PromptRenderer.from_files(qwen3_config)


def test_qwen3_is_detected_and_renders_developer_as_system(qwen3: PromptRenderer) -> None:
    """SPEC I5: the Qwen3 template has no developer branch; the probe finds that out."""
    assert resolve_profile(None, qwen3.source).name == "qwen3"
    assert qwen3.developer_as_system
    prompt = qwen3.render(
        conv_of({"input": [{"role": "developer", "content": "RULES-X"}, {"role": "user", "content": "hi"}]})
    )
    assert "<|im_start|>system\nRULES-X<|im_end|>" in prompt


def test_qwen3_one_turn_with_two_calls_and_results_in_order(qwen3: PromptRenderer) -> None:
    """SPEC I8: both calls in one assistant block, both results in one user block.

    Arguments reach Qwen3's template as a mapping, as in ``transformers``, so ``tojson`` re-spaces them.
    """
    prompt = qwen3.render(conv_of(two_calls()))
    assert (
        '<|im_start|>assistant\n<think>\nNeed both cities.\n</think>\n\n<tool_call>\n{"name": "get_weather", '
        '"arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": '
        '{"city": "Rome", "days": 2}}\n</tool_call><|im_end|>\n'
    ) in prompt
    assert (
        "<|im_start|>user\n<tool_response>\nmild\n</tool_response>\n<tool_response>\nwarm\n</tool_response><|im_end|>\n"
        in prompt
    )
    assert prompt.endswith("<|im_start|>assistant\n")
    assert '"name": "get_weather", "description": "Weather for a city"' in prompt


def test_qwen3_thinking_off_closes_the_think_block_in_the_prompt(qwen3: PromptRenderer) -> None:
    prompt = qwen3.render(conv_of({"input": "hi", "reasoning": {"effort": "none"}}))
    assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert qwen3.render(conv_of({"input": "hi", "reasoning": {"effort": "high"}})).endswith(
        "<|im_start|>assistant\n"
    )


def test_qwen3_replayed_sealed_reasoning_is_in_the_next_prompt(qwen3: PromptRenderer) -> None:
    """Acceptance: reasoning returned sealed, replayed with content null, rendered as the original text."""
    sealer = Sealer.from_secret("k")
    original = "I must look up the weather before answering."
    body = {
        "input": [
            {"role": "user", "content": "Weather?"},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [],
                "content": None,
                "encrypted_content": sealer.seal(original),
            },
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get_weather",
                "arguments": '{"city": "Paris"}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ],
        "tools": [WEATHER],
    }
    assert f"<think>\n{original}\n</think>" in qwen3.render(conv_of(body, sealer=sealer))


def test_qwen3_renders_the_codex_namespace_round_trip(qwen3: PromptRenderer) -> None:
    prompt = qwen3.render(fixture_conv("codex_namespace_call_turn2"))
    assert '"name": "multi_agent_v1.close_agent"' in prompt
    assert '{"name": "multi_agent_v1.close_agent", "arguments": {"target": "agent_does_not_exist"}}' in prompt
    assert prompt.count("<|im_start|>system\n") >= 2  # Codex's developer briefs arrive as system turns
    assert "<tool_response>\ninvalid agent id agent_does_not_exist" in prompt


def test_qwen3_renders_the_apply_patch_round_trip_as_an_input_argument(qwen3: PromptRenderer) -> None:
    prompt = qwen3.render(fixture_conv("codex_custom_apply_patch_turn2"))
    assert (
        '{"name": "apply_patch", "arguments": {"input": "*** Begin Patch\\n*** Add File: capture_hello.'
        in prompt
    )
    assert '"name": "apply_patch"' in prompt and "FREEFORM" in prompt


def test_qwen3_renders_every_fixture(qwen3: PromptRenderer) -> None:
    for path in sorted(FIXTURES.glob("*.json")):
        assert qwen3.render(fixture_conv(path.stem)).endswith("<|im_start|>assistant\n"), path.stem


# --- DeepSeek-V3 -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deepseek(deepseek_v3_config: Path) -> PromptRenderer:
    return PromptRenderer.from_files(deepseek_v3_config)


def test_deepseek_v3_renders_calls_with_null_content_and_its_own_markup(deepseek: PromptRenderer) -> None:
    """The DeepSeek template renders a call only when content is None: the probe learns that."""
    assert deepseek.traits.call_content is None and deepseek.traits.calls
    assert resolve_profile(None, deepseek.source).name == "deepseek_v3"
    prompt = deepseek.render(conv_of(two_calls()))
    assert prompt.startswith("<｜begin▁of▁sentence｜>")
    assert (
        '<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city":"Paris"}\n```'
        "<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
        '{"city": "Rome", "days": 2}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>'
    ) in prompt
    assert prompt.endswith(
        "<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>mild<｜tool▁output▁end｜>\n<｜tool▁output▁begin｜>warm<｜tool▁output▁end｜><｜tool▁outputs▁end｜>"
    )


def test_deepseek_v3_result_order_changes_the_prompt(deepseek: PromptRenderer) -> None:
    """The seed bug: swapping two results must not render a byte-identical prompt."""
    assert deepseek.render(conv_of(two_calls("A", "B"))) != deepseek.render(conv_of(two_calls("B", "A")))


def test_deepseek_v3_lists_tools_it_does_not_render_itself(deepseek: PromptRenderer) -> None:
    """Its template ignores ``tools``: the list goes into the system prompt, without a foreign call format."""
    assert not deepseek.traits.tools
    prompt = deepseek.render(conv_of(two_calls()))
    assert '"name": "get_weather"' in prompt.split("<｜User｜>")[0]
    assert "<tool_call>" not in prompt
    assert "Answer in one line." in prompt.split("<｜User｜>")[0]


def test_deepseek_v3_keeps_the_calls_of_a_turn_that_also_spoke(deepseek: PromptRenderer) -> None:
    body = two_calls()
    body["input"].insert(
        3,
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking both."}],
        },
    )
    prompt = deepseek.render(conv_of(body))
    assert "<｜Assistant｜>Checking both.<｜end▁of▁sentence｜><｜Assistant｜><｜tool▁calls▁begin｜>" in prompt


# --- SmolLM2 (ChatML in a GGUF) ----------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2(smollm2_gguf: Path) -> PromptRenderer:
    return PromptRenderer.from_files(smollm2_gguf)


def test_smollm2_template_and_special_tokens_come_from_the_gguf(smollm2: PromptRenderer) -> None:
    assert (smollm2.bos_token, smollm2.eos_token) == ("<|im_start|>", "<|im_end|>")
    assert resolve_profile(None, smollm2.source).name == "chatml"
    prompt = smollm2.render(conv_of({"input": "Say hello", "instructions": "Be brief"}))
    assert (
        prompt
        == "<|im_start|>system\nBe brief<|im_end|>\n<|im_start|>user\nSay hello<|im_end|>\n<|im_start|>assistant\n"
    )


def test_smollm2_renders_developer_verbatim_because_its_template_does(smollm2: PromptRenderer) -> None:
    """SPEC I5 by probe: the ChatML template prints any role, so developer stays developer."""
    assert not smollm2.developer_as_system
    prompt = smollm2.render(
        conv_of({"input": [{"role": "developer", "content": "D"}, {"role": "user", "content": "U"}]})
    )
    assert "<|im_start|>developer\nD<|im_end|>" in prompt


def test_smollm2_gets_tools_and_calls_in_the_hermes_convention(smollm2: PromptRenderer) -> None:
    """Its template renders neither tools nor calls; without this the model could never call a tool."""
    prompt = smollm2.render(conv_of(two_calls()))
    assert "<tools>\n" in prompt and "For each function call" in prompt
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in prompt
    assert "<|im_start|>tool\nmild<|im_end|>" in prompt


# --- GLM-style ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def glm() -> PromptRenderer:
    return PromptRenderer.from_files(GLM_TEMPLATE)


def test_glm_arguments_render_as_key_value_pairs_typed_by_value(glm: PromptRenderer) -> None:
    assert resolve_profile(None, glm.source).name == "glm47"
    prompt = glm.render(conv_of(two_calls()))
    assert (
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Rome</arg_value>"
        "<arg_key>days</arg_key><arg_value>2</arg_value></tool_call>"
    ) in prompt
    assert "<|assistant|><think>Need both cities.</think>" in prompt
    assert (
        "<|observation|><tool_response>mild</tool_response><|observation|><tool_response>warm</tool_response>"
        in prompt
    )
    assert prompt.endswith("<|assistant|><think>")


def test_glm_developer_renders_as_system_and_thinking_off_prefills_the_close(glm: PromptRenderer) -> None:
    conv = conv_of(
        {
            "input": [{"role": "developer", "content": "D"}, {"role": "user", "content": "U"}],
            "reasoning": {"effort": "none"},
        }
    )
    prompt = glm.render(conv)
    assert "<|system|>D<|user|>U" in prompt and prompt.endswith("<|assistant|></think>")


def test_glm_custom_tool_call_renders_its_input_argument(glm: PromptRenderer) -> None:
    prompt = glm.render(fixture_conv("codex_custom_apply_patch_turn2"))
    assert "<tool_call>apply_patch<arg_key>input</arg_key><arg_value>*** Begin Patch\n" in prompt
