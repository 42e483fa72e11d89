"""Llama 3.x pythonic calls: ``[get_weather(city="Paris"), get_time()]`` (``llama3_pythonic``).

Meta's prompt format for Llama 3.2 (the 1B/3B model card, llama.com "Llama 3.2 prompt
formats") tells the model: "If you decide to invoke any of the function(s), you MUST put it
in the format of [func_name1(params_name1=params_value1, params_name2=params_value2...),
func_name2(params)]. You SHOULD NOT include any other text in the response." So a call list
is the whole output: it starts (after whitespace) with ``[``, a name and ``(``.

Theory of operation
-------------------
``LEAD``       whitespace at the start of the output, held; the first other character
               decides: ``[`` opens a candidate, anything else makes the output text.
``CANDIDATE``  the text from ``[`` on, held. While its head is short it must still be able
               to grow into ``[name(``; once it cannot, it is text. Otherwise it is scanned
               one character at a time (brackets and Python string quotes, with escapes)
               until the ``]`` that closes the list; then it is read once with ``ast``:
               a list of calls to declared tools whose arguments are keyword literals
               becomes one :class:`ToolCall` each (Python ``True``/``None`` become JSON),
               anything else is released as text. Cut off before the ``]``, it is text.
``TEXT``       content, passed through; so is everything after a call list.

Every decision depends only on the text, and the scanner keeps its state across chunks,
so streaming gives the whole-text segments and each character is looked at once (SPEC P8).
"""

from __future__ import annotations

import ast
import enum
import json
import re
from collections.abc import Sequence
from typing import Any

from accord.pipeline.segments import Content, ParsedSegment, ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools.toolbox import ToolBox

_HEAD = re.compile(r"\[\s*[A-Za-z_][A-Za-z0-9_.]*\s*\(")
_MAY_GROW = re.compile(r"\[\s*(?:[A-Za-z_][A-Za-z0-9_.]*\s*)?")
_HEAD_MAX = 256
_OPEN, _CLOSE = "([{", ")]}"
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


class _Mode(enum.Enum):
    LEAD = "lead"
    CANDIDATE = "candidate"
    TEXT = "text"


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def parse_call_list(text: str, tools: ToolBox) -> list[ParsedSegment] | None:
    """The calls ``text`` (a whole ``[…]`` list) stands for; ``None`` unless every one is valid."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return None
    calls: list[ParsedSegment] = []
    for node in tree.body.elts:
        if not isinstance(node, ast.Call) or node.args:
            return None
        name = _dotted(node.func)
        tool = None if name is None else tools.resolve(name)
        if tool is None:
            return None
        arguments: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg in arguments:
                return None
            try:
                arguments[keyword.arg] = ast.literal_eval(keyword.value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                return None
        try:
            encoded = _ENCODER.encode(arguments)
        except (TypeError, ValueError, RecursionError):
            return None  # a set, bytes, NaN: not JSON
        calls.append(ToolCall(name=tool.name, arguments=encoded))
    return calls


class PythonicToolParser:
    """A ``ToolCallParser`` for Llama 3.x pythonic call lists."""

    def __init__(self, tools: Sequence[ToolSpec]) -> None:
        self._tools = ToolBox(tools)
        self._mode = _Mode.LEAD
        self._held: list[str] = []
        self._head = ""  # the candidate's start, while it is checked
        self._head_ok = False
        self._depth = 0
        self._quote = ""  # the open string's quote character(s), or ""
        self._escape = False

    def feed(self, text: str) -> list[ParsedSegment]:
        if not text:
            return []
        if self._mode is _Mode.TEXT:
            return [Content(text=text)]
        out: list[ParsedSegment] = []
        if self._mode is _Mode.LEAD:
            stripped = text.lstrip()
            if not stripped:
                self._held.append(text)
                return out
            lead = "".join(self._held) + text[: len(text) - len(stripped)]
            self._held = []
            if stripped[0] != "[":
                self._mode = _Mode.TEXT
                return [Content(text=lead + stripped)]
            if lead:
                out.append(Content(text=lead))
            self._mode = _Mode.CANDIDATE
            text = stripped
        self._candidate(text, out)
        return out

    def finish(self) -> list[ParsedSegment]:
        held = "".join(self._held)
        self._held = []
        self._mode = _Mode.TEXT
        return [Content(text=held)] if held else []

    def _candidate(self, text: str, out: list[ParsedSegment]) -> None:
        start = 0
        if not self._head_ok:
            self._head += text[: _HEAD_MAX - len(self._head)]
            if _HEAD.match(self._head):
                self._head_ok = True
            elif len(self._head) >= _HEAD_MAX or _MAY_GROW.fullmatch(self._head) is None:
                self._release(text, out)
                return
        end = self._scan(text, start)
        if end < 0:
            self._held.append(text)
            return
        self._held.append(text[:end])
        body = "".join(self._held)
        self._held = []
        self._mode = _Mode.TEXT
        calls = parse_call_list(body, self._tools)
        if calls is None:
            out.append(Content(text=body))
        else:
            out.extend(calls)
        if end < len(text):
            out.append(Content(text=text[end:]))

    def _release(self, text: str, out: list[ParsedSegment]) -> None:
        out.append(Content(text="".join(self._held) + text))
        self._held = []
        self._mode = _Mode.TEXT

    def _scan(self, text: str, i: int) -> int:
        """Where the list ends in ``text`` (just after its ``]``), or -1; the state carries over."""
        depth, quote, escape = self._depth, self._quote, self._escape
        n = len(text)
        while i < n:
            c = text[i]
            i += 1
            if quote:
                if escape:
                    escape = False
                elif c == "\\":
                    escape = True
                elif c == quote:
                    quote = ""
            elif c == '"' or c == "'":
                quote = c
            elif c in _OPEN:
                depth += 1
            elif c in _CLOSE:
                depth -= 1
                if depth == 0:
                    self._depth, self._quote, self._escape = 0, "", False
                    return i
        self._depth, self._quote, self._escape = depth, quote, escape
        return -1


def llama3_pythonic(tools: Sequence[ToolSpec]) -> PythonicToolParser:
    return PythonicToolParser(tools)


register("llama3_pythonic", llama3_pythonic)

__all__ = ["PythonicToolParser", "llama3_pythonic", "parse_call_list"]
