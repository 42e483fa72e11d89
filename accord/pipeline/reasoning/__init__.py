"""Reasoning splitters, one per model family, looked up by name (SPEC P1).

A family registers a :class:`ReasoningFactory`: it makes one splitter per request, given
the request's thinking switch and, where a template was rendered, the :class:`Start` read
from the prompt's tail with the family's own tags (``factory.start_after(prompt)``).
"""

from __future__ import annotations

from typing import Protocol

from accord.pipeline._registry import Registry
from accord.pipeline.reasoning._start import Start
from accord.pipeline.segments import Content, ParsedSegment


class ReasoningSplitter(Protocol):
    """Sans-IO: feed decoded text, get segments; ``finish`` flushes what was held back.

    ``verbatim`` becomes True once every further character is content, as it comes, with
    nothing held back: the parse stage then hands text straight to the tool parser.
    """

    @property
    def verbatim(self) -> bool: ...

    def feed(self, text: str) -> list[ParsedSegment]: ...

    def finish(self) -> list[ParsedSegment]: ...


class ReasoningFactory(Protocol):
    """One family's splitter maker and its reading of a rendered prompt."""

    def __call__(self, thinking: bool | None, start: Start | None = None) -> ReasoningSplitter:
        """A splitter for one request.

        ``start``: where the rendered prompt left the output (it wins); ``None`` when no
        template was rendered, and then ``thinking`` (``None``: the model default) decides.
        """
        ...

    def start_after(self, prompt: str) -> Start:
        """Where an output starts after this rendered ``prompt``."""
        ...


class PlainText:
    """The ``none`` splitter: every character is content."""

    verbatim = True

    def feed(self, text: str) -> list[ParsedSegment]:
        return [Content(text=text)] if text else []

    def finish(self) -> list[ParsedSegment]:
        return []


class _PlainFactory:
    def __call__(self, thinking: bool | None, start: Start | None = None) -> PlainText:
        del thinking, start
        return PlainText()

    def start_after(self, prompt: str) -> Start:
        del prompt
        return Start.OUTSIDE


_REGISTRY: Registry[ReasoningFactory] = Registry("reasoning parser")
_REGISTRY.register("none", _PlainFactory())


def register(name: str, factory: ReasoningFactory) -> None:
    _REGISTRY.register(name, factory)


def reasoning_parser(name: str) -> ReasoningFactory:
    """The factory registered under ``name``; ``KeyError`` names the known ones."""
    return _REGISTRY.lookup(name)


def reasoning_parser_names() -> list[str]:
    return _REGISTRY.names()


__all__ = [
    "PlainText",
    "ReasoningFactory",
    "ReasoningSplitter",
    "Start",
    "reasoning_parser",
    "reasoning_parser_names",
    "register",
]

# The families register themselves; imported last, once ``register`` exists.
from accord.pipeline.reasoning import _families, _harmony, _kimi_k3  # noqa: E402, F401
