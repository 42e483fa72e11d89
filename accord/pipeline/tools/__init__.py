"""Tool-call parsers, one per model family, looked up by name (SPEC P2)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from accord.pipeline._registry import Registry
from accord.pipeline.segments import Content, ParsedSegment, ToolSpec


class ToolCallParser(Protocol):
    """Sans-IO: feed content text, get content and complete calls; ``finish`` flushes."""

    def feed(self, text: str) -> list[ParsedSegment]: ...

    def finish(self) -> list[ParsedSegment]: ...


#: ``factory(tools)``: the tools the request offered, as the model sees them.
ToolParserFactory = Callable[[Sequence[ToolSpec]], ToolCallParser]


class NoTools:
    """The ``none`` parser (and ``tool_choice: "none"``): markup stays text."""

    def __init__(self, tools: Sequence[ToolSpec] = ()) -> None:
        del tools

    def feed(self, text: str) -> list[ParsedSegment]:
        return [Content(text=text)] if text else []

    def finish(self) -> list[ParsedSegment]:
        return []


_REGISTRY: Registry[ToolParserFactory] = Registry("tool parser")
_REGISTRY.register("none", NoTools)


def register(name: str, factory: ToolParserFactory) -> None:
    _REGISTRY.register(name, factory)


def tool_parser(name: str) -> ToolParserFactory:
    """The factory registered under ``name``; ``KeyError`` names the known ones."""
    return _REGISTRY.lookup(name)


def tool_parser_names() -> list[str]:
    return _REGISTRY.names()


__all__ = [
    "NoTools",
    "ToolCallParser",
    "ToolParserFactory",
    "register",
    "tool_parser",
    "tool_parser_names",
]

# The families register themselves: formats whose calls are reported whole (GLM,
# Qwen3-Coder, DSML, Llama 3 pythonic, Gemma 4, Kimi K3) and formats whose arguments are JSON (Hermes, Llama 3,
# Mistral, DeepSeek V3/V3.1, Kimi-K2, harmony).
from accord.pipeline.tools import (  # noqa: E402, F401
    _deepseek,
    _dsml,
    _gemma4,
    _glm,
    _harmony,
    _hermes,
    _kimi,
    _kimi_k3,
    _llama3,
    _mistral,
    _pythonic,
    _qwen3_coder,
)
