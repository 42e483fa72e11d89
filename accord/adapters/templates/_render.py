"""Conversation -> prompt text through the model's chat template.

Strategy: a template is code we did not write, so before its first real render it is
asked, with probe conversations, what it does with the things templates disagree on:
whether it renders the ``developer`` role (SPEC I5: else developer renders as system),
whether it renders the ``tools`` and the assistant's calls and results it is given (else
they are written into the messages in the Hermes convention, see ``_dicts.py``), and
whether a turn that only calls needs ``content`` None (DeepSeek) or "" (Qwen). The
answers are kept per template: probing is by rendering, never by reading its source.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
import msgspec

from accord.adapters.requests import Conversation
from accord.errors import RequestError
from accord.pipeline.reasoning import ReasoningFactory, Start

from ._dicts import (
    message_dict,
    tool_dicts,
    with_calls_in_text,
    with_text_apart_from_calls,
    with_tools_in_system,
)
from ._jinja import TemplateRaised, arguments_value, make_environment
from ._loading import load_template_files
from ._plain import render_plain

#: Text of the probes; unlikely to occur in any template.
PROBE = "accord-probe-7f3a"
_PROBE_TOOL = "accord_probe_tool_7f3a"
_PROBE_RESULT = "accord-probe-result-7f3a"
_PROBE_ARGUMENT = "accord-probe-argument-7f3a"

# Errors a template's own code raises on data it does not accept.
_TEMPLATE_ERRORS = (
    TemplateRaised,
    jinja2.TemplateError,
    TypeError,
    ValueError,
    KeyError,
    IndexError,
    AttributeError,
)


class TemplateTraits(msgspec.Struct, frozen=True, kw_only=True):
    """What one template does with the things templates disagree on (learned by probing)."""

    developer: bool = True
    tools: bool = True
    calls: bool = True
    results: bool = True
    #: The ``content`` of an assistant turn that only calls: "" or None.
    call_content: str | None = ""


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
        self._traits: TemplateTraits | None = None

    @classmethod
    def plain(cls) -> PromptRenderer:
        """The built-in format (``_plain.py``), for when no template is configured."""
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
        """Compile a chat template; a template that does not compile raises jinja2's error."""
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
    def traits(self) -> TemplateTraits:
        if self._traits is None:
            self._traits = TemplateTraits() if self._template is None else self._probe()
        return self._traits

    @property
    def developer_as_system(self) -> bool:
        """Whether ``developer`` messages are rendered as ``system`` with this template (SPEC I5)."""
        return not self.traits.developer

    def reasoning_start(self, prompt: str, splitter: ReasoningFactory) -> Start | None:
        """Where the output starts after ``prompt``, read from its tail with the family's tags.

        ``None`` for the plain built-in format: no template rendered a reasoning block, so
        the request's switch and the family's default decide (issue: reasoning start).
        """
        return None if self._template is None else splitter.start_after(prompt)

    def render(self, conv: Conversation) -> str:
        if self._template is None:
            return render_plain(conv)
        traits = self.traits
        messages = [
            message_dict(m, developer_as_system=not traits.developer, call_content=traits.call_content)
            for m in conv.messages
        ]
        tools = tool_dicts(conv.tools) if conv.tools else None
        if not traits.calls:
            messages = with_calls_in_text(messages, results=not traits.results)
        elif traits.call_content is None:
            messages = with_text_apart_from_calls(messages)
        if tools and not traits.tools:
            messages = with_tools_in_system(messages, conv.tools, call_format=not traits.calls)
            tools = None
        kwargs = dict(self.kwargs)
        if conv.thinking is not None:
            kwargs["enable_thinking"] = conv.thinking
            kwargs["thinking"] = conv.thinking
        try:
            return self._render_dicts(messages, tools, kwargs)
        except TemplateRaised as exc:
            raise RequestError(
                f"The model's chat template refused this conversation: {exc}", param="input"
            ) from None
        except _TEMPLATE_ERRORS as exc:
            raise RequestError(
                f"The model's chat template could not render this conversation: {type(exc).__name__}: {exc}",
                param="input",
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

    def _try(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
        """A probe render; a template that raises on the probe does not render what it probes."""
        try:
            return self._render_dicts(messages, tools, self.kwargs)
        except _TEMPLATE_ERRORS:
            return ""

    def _probe(self) -> TemplateTraits:
        user = {"role": "user", "content": "hello"}
        developer = PROBE in self._try([{"role": "developer", "content": PROBE}, user])
        tool = {
            "type": "function",
            "function": {"name": _PROBE_TOOL, "description": "probe", "parameters": {"type": "object"}},
        }
        tools = _PROBE_TOOL in self._try([user], [tool])
        call_content: str | None = ""
        calls = False
        results = False
        for content in ("", None):
            call = {
                "id": "call_probe",
                "type": "function",
                "function": {
                    "name": _PROBE_TOOL,
                    "arguments": arguments_value(f'{{"q": "{_PROBE_ARGUMENT}"}}'),
                },
            }
            text = self._try(
                [
                    user,
                    {"role": "assistant", "content": content, "tool_calls": [call]},
                    {
                        "role": "tool",
                        "content": _PROBE_RESULT,
                        "tool_call_id": "call_probe",
                        "name": _PROBE_TOOL,
                    },
                ],
                [tool],
            )
            # The argument value appears only where the call itself was rendered.
            if _PROBE_ARGUMENT in text:
                call_content, calls, results = content, True, _PROBE_RESULT in text
                break
            results = results or _PROBE_RESULT in text
        return TemplateTraits(
            developer=developer, tools=tools, calls=calls, results=results, call_content=call_content
        )
