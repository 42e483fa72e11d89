"""Model profiles name the parsers each family needs; detection only where the template is unambiguous."""

from __future__ import annotations

import pytest

from accord.adapters.templates import PROFILES, detect_family, resolve_profile

REASONING = {"none", "qwen3", "deepseek_r1", "deepseek_v3", "glm45", "glm47", "kimi_k2", "harmony", "mistral",
             "gemma4", "kimi_k3"}  # fmt: skip
TOOLS = {
    "none", "glm45", "glm47", "hermes", "qwen3_coder", "deepseek_v3", "deepseek_v31",
    "deepseek_v32", "kimi_k2", "harmony", "deepseek_v4", "llama3_json", "llama3_pythonic", "mistral",
    "gemma4", "kimi_k3",
}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "reasoning", "tools"),
    [
        ("chatml", "none", "hermes"),
        ("smollm2", "none", "hermes"),
        ("qwen3", "qwen3", "hermes"),
        ("qwen3_coder", "qwen3", "qwen3_coder"),
        ("deepseek_r1", "deepseek_r1", "deepseek_v3"),
        ("deepseek_v31", "deepseek_v3", "deepseek_v31"),
        ("deepseek_v32", "deepseek_v3", "deepseek_v32"),
        ("glm45", "glm45", "glm45"),
        ("glm47", "glm47", "glm47"),
        ("kimi_k2", "kimi_k2", "kimi_k2"),
        ("gpt_oss", "harmony", "harmony"),
        ("llama3", "none", "llama3_json"),
        ("mistral", "mistral", "mistral"),
        ("gemma4", "gemma4", "gemma4"),
        ("kimi_k3", "kimi_k3", "kimi_k3"),
    ],
)
def test_named_profiles(name: str, reasoning: str, tools: str) -> None:
    profile = resolve_profile(name, None)
    assert (profile.reasoning_parser, profile.tool_parser) == (reasoning, tools)


def test_every_profile_names_registered_parser_names() -> None:
    for profile in PROFILES.values():
        assert profile.reasoning_parser in REASONING and profile.tool_parser in TOOLS


def test_unknown_profile_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="glm47"):
        resolve_profile("nonesuch", None)


def test_explicit_parsers_override_the_profile() -> None:
    profile = resolve_profile("qwen3", None).with_overrides(tool_parser="qwen3_coder")
    assert (profile.reasoning_parser, profile.tool_parser) == ("qwen3", "qwen3_coder")


@pytest.mark.parametrize(
    ("snippet", "family"),
    [
        ("<|start|>assistant<|channel|>final<|message|>", "gpt_oss"),
        ("<｜DSML｜function_calls>", "deepseek_v32"),
        ("<｜tool▁call▁begin｜>{{ name }}<｜tool▁sep｜>{{ args }}", "deepseek_v31"),
        ("<｜tool▁sep｜>\n```json\n<think>", "deepseek_r1"),
        ("'\\n<tool_call>' + name + '\\n'<arg_key>{{k}}</arg_key>{{ '\\n<think></think>' }}", "glm45"),
        ("<tool_call>{{ name }}<arg_key>{{ k }}</arg_key>", "glm47"),
        ("<|tool_calls_section_begin|>", "kimi_k2"),
        ("<|im_start|><function={{n}}><parameter={{p}}>", "qwen3_coder"),
        ("<|start_header_id|>", "llama3"),
        ("[INST]", "mistral"),
        ("{{- '<|turn>' + role + '\\n' }}{{- '<|channel>thought\\n<channel|>' -}}", "gemma4"),
        # Kimi K3's open_tag / close_tag macros (its template also writes <|im_... nowhere).
        ("{%- macro open_tag(t) -%}<|open|>{{ t }}<|sep|>{%- endmacro -%}", "kimi_k3"),
        ("<|im_start|>{{ role }}", "chatml"),
    ],
)
def test_detection_from_template_markers(snippet: str, family: str) -> None:
    assert detect_family(snippet) == family
    assert resolve_profile(None, snippet).name == family


def test_unrecognised_template_falls_back_to_chatml() -> None:
    assert detect_family("{{ messages }}") is None
    assert resolve_profile(None, "{{ messages }}").name == "chatml"
    assert resolve_profile(None, None).name == "chatml"


def test_llama3_pythonic_template_is_detected() -> None:
    """A Llama 3 template that asks for Meta's [func_name1(...)] lists gets the pythonic parser."""
    from accord.adapters.templates import detect_family

    template = (
        "<|start_header_id|>system<|end_header_id|>you MUST put it in the format of "
        "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]"
    )
    assert detect_family(template) == "llama3_pythonic"
    assert detect_family("<|start_header_id|>user<|end_header_id|>") == "llama3"
