"""Templates load from the files models ship, and run sandboxed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accord.adapters.requests import Conversation, NormalizeOptions, RequestLimits, decode_request, normalize
from accord.adapters.templates import PromptRenderer, load_chat_template, load_template_files, render_plain
from accord.errors import RequestError

TEMPLATE = "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"


def conv(body: dict[str, object]) -> Conversation:
    return normalize(decode_request(json.dumps(body).encode(), RequestLimits()), options=NormalizeOptions())


def test_hf_directory_prefers_chat_template_jinja_and_reads_added_token_dicts(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps(
            {"chat_template": "old", "bos_token": {"content": "<s>", "lstrip": False}, "eos_token": "</s>"}
        )
    )
    (tmp_path / "chat_template.jinja").write_text(TEMPLATE)
    files = load_template_files(tmp_path)
    assert (files.template, files.bos_token, files.eos_token) == (TEMPLATE, "<s>", "</s>")
    assert PromptRenderer.from_files(tmp_path).render(conv({"input": "hi"})) == "<s>[user]hi"


def test_tokenizer_config_with_named_templates_uses_default(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer_config.json"
    path.write_text(
        json.dumps(
            {"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}
        )
    )
    assert load_chat_template(path) == "D"


def test_a_jinja_file_is_the_template_itself(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text(TEMPLATE)
    assert load_chat_template(path) == TEMPLATE


def test_a_directory_without_a_template_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text("{}")
    with pytest.raises(ValueError, match="no chat template"):
        load_chat_template(tmp_path)


def test_gguf_template(smollm2_gguf: Path) -> None:
    assert load_chat_template(smollm2_gguf).startswith("{% for message in messages %}")


def test_templates_cannot_mutate_or_reach_internals() -> None:
    """A template is code from a model repository: the sandbox keeps it from mutating or escaping."""
    mutating = PromptRenderer.from_template("{{ messages.append(1) }}")
    with pytest.raises(RequestError):
        mutating.render(conv({"input": "hi"}))
    escaping = PromptRenderer.from_template("{{ messages.__class__.__mro__ }}")
    with pytest.raises(RequestError):
        escaping.render(conv({"input": "hi"}))


def test_raise_exception_in_a_template_is_a_400_with_its_message() -> None:
    strict = PromptRenderer.from_template("{{ raise_exception('Conversation roles must alternate') }}")
    with pytest.raises(RequestError, match="roles must alternate") as info:
        strict.render(conv({"input": "hi"}))
    assert info.value.param == "input"


def test_hf_helpers_behave_like_transformers() -> None:
    """tojson keeps non-ASCII and honours indent; strftime_now and {% generation %} exist."""
    source = "{{ messages[0].content | tojson }}|{{ {'a': 1} | tojson(indent=2) }}|{{ strftime_now('%Y') | length }}|{% generation %}G{% endgeneration %}"
    out = PromptRenderer.from_template(source).render(conv({"input": "北京"}))
    assert out == '"北京"|{\n  "a": 1\n}|4|G'


def test_plain_format_is_documented_and_stable() -> None:
    body = {
        "instructions": "S",
        "input": [
            {"role": "user", "content": "U"},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "R"}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}'},
            {"type": "function_call_output", "call_id": "c1", "output": "O"},
        ],
        "tools": [{"type": "function", "name": "f", "description": "d", "parameters": {"type": "object"}}],
    }
    assert render_plain(conv(body)) == (
        '<|tools|>\n[{"name": "f", "description": "d", "parameters": {"type": "object"}}]\n'
        "<|system|>\nS\n<|user|>\nU\n<|assistant|>\n<think>R</think>\n"
        '<tool_call>{"id": "c1", "name": "f", "arguments": {"a": 1}}</tool_call>\n'
        "<|tool|> c1\nO\n<|assistant|>\n"
    )
