"""Gemma 4 tool calls (``gemma4``, docs/model-formats.md B15)::

    <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>

The format, as Google's Gemma 4 chat template writes a model turn's calls (the template
vendored in llama.cpp as ``models/templates/gemma4.jinja``, its ``format_argument`` macro):

- each call is ``<|tool_call>call:NAME{…}<tool_call|>``; several calls follow one another;
- the arguments are ``key:value`` pairs separated by ``,``, keys bare (the template renders
  a call's keys with ``escape_keys=False``, nested objects' keys too);
- a string value is wrapped in the ``<|"|>`` token, unescaped; booleans are ``true`` and
  ``false``; numbers are bare; objects are ``{k:v,…}`` and arrays ``[v,…]``.

Public Gemma 4 parsers describe the same wire format (vLLM's ``gemma4`` parser, issue
vllm-project/vllm#44522; the vllm-mlx pull requests #254 and #267). One of them also accepts
a key quoted with ``<|"|>``, as the template writes keys in tool declarations; so does this one.

Arguments are returned as JSON, typed by the syntax (not the schema: the template already
told the model which values are strings): a ``<|"|>`` string becomes a JSON string, a bare
JSON number, ``true``, ``false`` or ``null`` stays as it is (``True``, ``False`` and
``None``, as Jinja prints Python values, are read as JSON's), and any other bare word is a
string. A body that is not one or more complete ``call:NAME{…}`` with a declared name is
released as text (SPEC P4), and so is a call cut off before its ``<tool_call|>``.

Inside a ``<|"|>`` string the format's own markup is data (SPEC P5): the engine
(:mod:`._blocks`) toggles on each ``<|"|>``, and while a string is open neither
``<tool_call|>`` ends the call nor ``<|tool_call>`` restarts it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from accord.pipeline.segments import ParsedSegment, ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._blocks import BlockMarkup, BlockToolParser, Reopen, ToolBox, skip_space
from accord.pipeline.tools.markup import GEMMA4_CALL_CLOSE, GEMMA4_CALL_OPEN, GEMMA4_QUOTE

_CALL = "call:"
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {
    "true": "true",
    "false": "false",
    "null": "null",
    "True": "true",
    "False": "false",
    "None": "null",
}
#: A bare scalar (number, literal, word) runs to one of these.
_SCALAR_END = re.compile(r"[,}\]]|" + re.escape(GEMMA4_QUOTE))
_ENCODER = json.JSONEncoder(ensure_ascii=False)
#: The reader raises ValueError with this when the text is not the Gemma value syntax; it
#: never leaves this module (``parse_arguments`` turns it into ``None``).
_NOT_GEMMA = "not a Gemma 4 value"


class _Reader:
    """A recursive-descent reader of Gemma values that writes JSON text as it goes.

    Each character is read once; nesting deeper than Python's recursion limit is invalid.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []

    def skip(self, i: int) -> int:
        return skip_space(self.text, i)

    def string(self, i: int) -> tuple[str, int]:
        """The string opened by the ``<|"|>`` at ``i`` and the position after its closing one."""
        start = i + len(GEMMA4_QUOTE)
        end = self.text.find(GEMMA4_QUOTE, start)
        if end < 0:
            raise ValueError(_NOT_GEMMA)
        return self.text[start:end], end + len(GEMMA4_QUOTE)

    def key(self, i: int) -> tuple[str, int]:
        """The key at ``i`` and the position after its ``:``."""
        text = self.text
        if text.startswith(GEMMA4_QUOTE, i):
            key, i = self.string(i)
            i = self.skip(i)
            if not text.startswith(":", i):
                raise ValueError(_NOT_GEMMA)
        else:
            colon = text.find(":", i)
            if colon < 0:
                raise ValueError(_NOT_GEMMA)
            key = text[i:colon].strip()
            if not key or any(c in key for c in ',{}[]<>"') or GEMMA4_QUOTE in key:
                raise ValueError(_NOT_GEMMA)
            i = colon
        return key, i + 1

    def obj(self, i: int) -> int:
        """Read the object whose ``{`` is at ``i``; the position after its ``}``."""
        text, out = self.text, self.out
        out.append("{")
        i = self.skip(i + 1)
        if text.startswith("}", i):
            out.append("}")
            return i + 1
        seen: set[str] = set()
        while True:
            key, i = self.key(i)
            if key in seen:
                # A repeated key keeps its first value, as the other parsers do: the
                # second is read (it must still be valid) into a discarded buffer.
                kept, self.out = self.out, []
                i = self.value(self.skip(i))
                self.out = kept
                if out[-1] == ", ":
                    out.pop()
            else:
                seen.add(key)
                out.append(_ENCODER.encode(key))
                out.append(": ")
                i = self.value(self.skip(i))
            i = self.skip(i)
            if text.startswith(",", i):
                out.append(", ")
                i = self.skip(i + 1)
            elif text.startswith("}", i):
                out.append("}")
                return i + 1
            else:
                raise ValueError(_NOT_GEMMA)

    def array(self, i: int) -> int:
        text, out = self.text, self.out
        out.append("[")
        i = self.skip(i + 1)
        if text.startswith("]", i):
            out.append("]")
            return i + 1
        while True:
            i = self.skip(self.value(i))
            if text.startswith(",", i):
                out.append(", ")
                i = self.skip(i + 1)
            elif text.startswith("]", i):
                out.append("]")
                return i + 1
            else:
                raise ValueError(_NOT_GEMMA)

    def value(self, i: int) -> int:
        text = self.text
        if text.startswith(GEMMA4_QUOTE, i):
            string, i = self.string(i)
            self.out.append(_ENCODER.encode(string))
            return i
        if text.startswith("{", i):
            return self.obj(i)
        if text.startswith("[", i):
            return self.array(i)
        match = _SCALAR_END.search(text, i)
        end = match.start() if match else len(text)
        word = text[i:end].strip()
        if not word or (match is not None and match.group() == GEMMA4_QUOTE):
            raise ValueError(_NOT_GEMMA)
        literal = _LITERALS.get(word)
        if literal is not None:
            self.out.append(literal)
        elif _NUMBER.fullmatch(word):
            self.out.append(word)
        else:
            self.out.append(_ENCODER.encode(word))
        return end


def parse_arguments(text: str, start: int) -> tuple[str, int] | None:
    """The JSON text of the ``{…}`` arguments at ``start`` and the position after them."""
    reader = _Reader(text)
    try:
        end = reader.obj(start)
    except (ValueError, RecursionError):
        return None
    return "".join(reader.out), end


def parse_calls(body: str, tools: ToolBox) -> list[ParsedSegment] | None:
    """The calls of one block body (``call:NAME{…}``, once or more); ``None`` unless all are valid."""
    calls: list[ParsedSegment] = []
    reader = _Reader(body)
    i = reader.skip(0)
    while i < len(body) or not calls:
        if not body.startswith(_CALL, i):
            return None
        brace = body.find("{", i + len(_CALL))
        if brace < 0:
            return None
        tool = tools.resolve(body[i + len(_CALL) : brace].strip())
        if tool is None:
            return None
        parsed = parse_arguments(body, brace)
        if parsed is None:
            return None
        arguments, i = parsed
        calls.append(ToolCall(name=tool.name, arguments=arguments))
        i = reader.skip(i)
    return calls


class Gemma4Format(BlockMarkup):
    """Gemma 4's markup: ``<|"|>`` opens and closes a string, inside which markup is data."""

    openers: tuple[str, ...] = (GEMMA4_CALL_OPEN,)
    closers: tuple[str, ...] = (GEMMA4_CALL_CLOSE,)
    inner: tuple[str, ...] = (GEMMA4_QUOTE,)
    toggles: frozenset[str] = frozenset({GEMMA4_QUOTE})

    def ends_block(self, opener: str, tail: str, whole: bool, last_inner: str | None) -> bool:
        del opener, tail, whole
        return last_inner != GEMMA4_QUOTE

    def reopens(self, opener: str, marker: str, tail: str, last_inner: str | None) -> Reopen:
        del opener, marker, tail
        return Reopen.DATA if last_inner == GEMMA4_QUOTE else Reopen.RESTART

    def parse(self, opener: str, body: str, closer: str | None, tools: ToolBox) -> list[ParsedSegment] | None:
        del opener
        if closer is None:
            return None
        return parse_calls(body, tools)


_GEMMA4 = Gemma4Format()


def gemma4(tools: Sequence[ToolSpec]) -> BlockToolParser:
    return BlockToolParser(_GEMMA4, tools)


register("gemma4", gemma4)

__all__ = ["Gemma4Format", "gemma4", "parse_arguments", "parse_calls"]
