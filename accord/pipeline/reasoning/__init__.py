"""Reasoning splitters, one per model family, looked up by name (SPEC P1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from accord.pipeline.segments import Content, ParsedSegment


class ReasoningSplitter(Protocol):
    """Sans-IO: feed decoded text, get segments; ``finish`` flushes what was held back."""

    def feed(self, text: str) -> list[ParsedSegment]: ...

    def finish(self) -> list[ParsedSegment]: ...


#: ``factory(thinking)``: ``thinking`` is the request's thinking switch (``None``: the model default).
ReasoningFactory = Callable[[bool | None], ReasoningSplitter]


class PlainText:
    """The ``none`` splitter: every character is content."""

    def __init__(self, thinking: bool | None = None) -> None:
        del thinking

    def feed(self, text: str) -> list[ParsedSegment]:
        return [Content(text=text)] if text else []

    def finish(self) -> list[ParsedSegment]:
        return []


_REGISTRY: dict[str, ReasoningFactory] = {"none": PlainText}


def register(name: str, factory: ReasoningFactory) -> None:
    _REGISTRY[name] = factory


def reasoning_parser(name: str) -> ReasoningFactory:
    """The factory registered under ``name``; ``KeyError`` names the known ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown reasoning parser {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def reasoning_parser_names() -> list[str]:
    return sorted(_REGISTRY)


__all__ = [
    "PlainText",
    "ReasoningFactory",
    "ReasoningSplitter",
    "reasoning_parser",
    "reasoning_parser_names",
    "register",
]

# The families register themselves; imported last, once ``register`` exists.
from accord.pipeline.reasoning import _families, _harmony  # noqa: E402, F401
