"""The sandboxed jinja2 environment chat templates run in, matching Hugging Face's.

Chat templates are code shipped with a model: they run in an immutable sandbox (no
attribute access to internals, no mutation of passed-in data). The helpers they expect
(``raise_exception``, ``strftime_now``, a ``tojson`` that keeps non-ASCII text and
honours ``indent``, the ``{% generation %}`` block) behave as in ``transformers``, so a
template renders here exactly as it rendered for the model's trainers.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

from accord.errors import RequestError


class TemplateRaised(RequestError):
    """The template itself refused the conversation through ``raise_exception``."""


def _raise_exception(message: str) -> None:
    raise TemplateRaised(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """``json.dumps`` with Hugging Face's defaults (jinja2's own escapes HTML and sorts keys)."""
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


class _GenerationBlock(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}`` marks assistant text for training masks; here it only renders."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


class Arguments(dict[str, Any]):
    """Call arguments that templates may use either as a mapping or as the JSON text.

    Templates disagree: GLM's iterates ``arguments.items()``, Llama's pipes it through
    ``tojson``, DeepSeek's concatenates it as a string. A mapping that stringifies and
    concatenates as the original text satisfies all of them.
    """

    def __init__(self, parsed: dict[str, Any], text: str) -> None:
        super().__init__(parsed)
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __add__(self, other: object) -> str:
        if isinstance(other, str):
            return self.text + other
        return NotImplemented

    def __radd__(self, other: object) -> str:
        if isinstance(other, str):
            return other + self.text
        return NotImplemented


def arguments_value(text: str) -> Arguments | str:
    """The template-side value of a call's arguments (a JSON object, else the raw text)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    return Arguments(parsed, text) if isinstance(parsed, dict) else text


def make_environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationBlock, jinja2.ext.loopcontrols],
        undefined=jinja2.Undefined,
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env
