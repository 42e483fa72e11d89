"""Conversation -> prompt text, through the model's chat template or a plain built-in format.

The message dicts follow the Hugging Face chat convention (``role``, ``content``,
``tool_calls`` with ``function.name``/``function.arguments``, ``tool_call_id``,
``reasoning_content``) and tools the Chat shape ``{"type": "function", "function": ...}``,
because that is what templates were written against (protocol.md B14 #10).

The plain format, used when no template is configured (scripted engine, tests)::

    <|tools|>
    [{"name": ..., "description": ..., "parameters": ...}, ...]
    <|system|>
    text
    <|user|>
    text
    <|assistant|>
    <think>reasoning</think>
    text
    <tool_call>{"id": ..., "name": ..., "arguments": {...}}</tool_call>
    <|tool|> call_id
    result text
    <|assistant|>

Each block ends with a newline; the prompt ends with the open ``<|assistant|>`` line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from accord.adapters.requests import PART_SEPARATOR, ChatMessage, Conversation, TextPart
from accord.errors import RequestError
from accord.pipeline.segments import ToolSpec

from ._jinja import TemplateRaised, arguments_value, make_environment, tojson
from ._loading import load_template_files

#: Text of the developer-role probe (SPEC I5); unlikely to occur in any template.
PROBE = "accord-developer-role-probe-7f3a"


def tool_dicts(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """Tools in the Chat Completions shape templates expect."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool.name}
        if tool.description:
            function["description"] = tool.description
        function["parameters"] = tool.parameters or {"type": "object", "properties": {}}
        out.append({"type": "function", "function": function})
    return out


def message_dict(message: ChatMessage, *, developer_as_system: bool, vision: bool = True) -> dict[str, Any]:
    role = "system" if message.role == "developer" and developer_as_system else message.role
    content: Any = message.text
    if vision and message.has_images:
        content = [
            {"type": "text", "text": p.text}
            if isinstance(p, TextPart)
            else {"type": "image", "image": p.url, "image_url": p.url, "file_id": p.file_id}
            for p in message.content
        ]
    data: dict[str, Any] = {"role": role, "content": content}
    if message.tool_calls:
        data["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments_value(call.arguments)},
            }
            for call in message.tool_calls
        ]
    if message.role == "tool":
        data["tool_call_id"] = message.tool_call_id
        if message.name is not None:
            data["name"] = message.name
    if message.reasoning is not None:
        data["reasoning_content"] = message.reasoning
        data["thinking"] = message.reasoning
    return data


class PromptRenderer:
    """Renders conversations into prompt text; one instance per chat template."""

    def __init__(
        self,
        template: jinja2.Template | None,
        *,
        bos_token: str = "",
        eos_token: str = "",
        kwargs: Mapping[str, Any] | None = None,
        source: str | None = None,
    ) -> None:
        self._template = template
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.kwargs = dict(kwargs or {})
        self.source = source
        self._developer_as_system: bool | None = None

    @classmethod
    def plain(cls) -> PromptRenderer:
        return cls(None)

    @classmethod
    def from_template(
        cls,
        source: str,
        *,
        bos_token: str = "",
        eos_token: str = "",
        kwargs: Mapping[str, Any] | None = None,
    ) -> PromptRenderer:
        """Compile a chat template; a template that does not compile is a configuration error."""
        template = make_environment().from_string(source)
        return cls(template, bos_token=bos_token, eos_token=eos_token, kwargs=kwargs, source=source)

    @classmethod
    def from_files(cls, path: Path | str, *, kwargs: Mapping[str, Any] | None = None) -> PromptRenderer:
        """The template a model ships (GGUF, HF directory, ``tokenizer_config.json`` or ``.jinja``)."""
        files = load_template_files(path)
        return cls.from_template(
            files.template, bos_token=files.bos_token, eos_token=files.eos_token, kwargs=kwargs
        )

    @property
    def is_plain(self) -> bool:
        return self._template is None

    @property
    def developer_as_system(self) -> bool:
        """Whether this template drops ``developer`` messages, decided by one probe render (SPEC I5)."""
        if self._developer_as_system is None:
            self._developer_as_system = not self._renders_developer()
        return self._developer_as_system

    def _renders_developer(self) -> bool:
        if self._template is None:
            return True
        probe = [{"role": "developer", "content": PROBE}, {"role": "user", "content": "hello"}]
        try:
            text = self._render_dicts(probe, None, {})
        except Exception:
            # A template that rejects the role does not render it either.
            return False
        return PROBE in text

    def render(self, conv: Conversation) -> str:
        if self._template is None:
            return render_plain(conv)
        developer_as_system = self.developer_as_system
        messages = [message_dict(m, developer_as_system=developer_as_system) for m in conv.messages]
        kwargs = dict(self.kwargs)
        if conv.thinking is not None:
            kwargs["enable_thinking"] = conv.thinking
            kwargs["thinking"] = conv.thinking
        tools = tool_dicts(conv.tools) if conv.tools else None
        try:
            return self._render_dicts(messages, tools, kwargs)
        except TemplateRaised as exc:
            raise RequestError(
                f"The model's chat template refused this conversation: {exc}", param="input"
            ) from None
        except jinja2.TemplateError as exc:
            raise RequestError(
                f"The model's chat template could not render this conversation: {exc}", param="input"
            ) from None

    def _render_dicts(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, kwargs: Mapping[str, Any]
    ) -> str:
        assert self._template is not None
        context: dict[str, Any] = {
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            **kwargs,
            "messages": messages,
            "tools": tools,
            "add_generation_prompt": True,
        }
        return self._template.render(**context)


def render_plain(conv: Conversation) -> str:
    """The built-in format (module docstring): readable, unambiguous, stable for tests."""
    out: list[str] = []
    if conv.tools:
        listing = [
            {"name": t.name, "description": t.description or "", "parameters": t.parameters or {}}
            for t in conv.tools
        ]
        out.append("<|tools|>\n" + tojson(listing) + "\n")
    for message in conv.messages:
        text = PART_SEPARATOR.join(p.text if isinstance(p, TextPart) else "[image]" for p in message.content)
        if message.role == "tool":
            out.append(f"<|tool|> {message.tool_call_id or ''}\n{text}\n")
            continue
        block = [f"<|{message.role}|>\n"]
        if message.reasoning:
            block.append(f"<think>{message.reasoning}</think>\n")
        if text:
            block.append(text + "\n")
        for call in message.tool_calls:
            payload = {"id": call.id, "name": call.name, "arguments": arguments_value(call.arguments)}
            block.append(f"<tool_call>{json.dumps(payload, ensure_ascii=False)}</tool_call>\n")
        out.append("".join(block))
    out.append("<|assistant|>\n")
    return "".join(out)
