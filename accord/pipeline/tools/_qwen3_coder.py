"""Qwen3-Coder / Qwen3.5 XML tool calls (``qwen3_coder``, protocol.md B8)::

    <tool_call>
    <function=get_weather>
    <parameter=city>
    San Francisco
    </parameter>
    </function>
    </tool_call>

One ``<tool_call>`` block may hold several functions. Each value loses one leading and one
trailing newline (the layout above) and is then typed by the schema (SPEC P5). A value runs
to the first ``</parameter>`` followed by the next ``<parameter=``, ``</function>`` or the end of
the block, so it may quote that tag; when no such ``</parameter>`` exists the value ends at the
next ``<parameter=`` or ``</function>`` (the model forgot the closing tag). A block that is not
functions and parameters only, or names an undeclared tool, is released as text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from accord.pipeline.segments import ParsedSegment, ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._blocks import BlockToolParser, ToolBox
from accord.pipeline.tools.markup import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

_FUNC_OPEN, _FUNC_CLOSE = "<function=", "</function>"
_PARAM_OPEN, _PARAM_CLOSE = "<parameter=", "</parameter>"
_WS = re.compile(r"\s*")


def _skip(text: str, i: int) -> int:
    match = _WS.match(text, i)
    return match.end() if match else i


def _trim_newline(value: str) -> str:
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


class _Scan:
    """One pass over a block body; remembers where no more ``</parameter>`` can be found."""

    def __init__(self, body: str) -> None:
        self.body = body
        self.no_close_from = len(body) + 1

    def value_end(self, start: int) -> tuple[int, int] | None:
        """(end of the value, where parsing resumes) for a value starting at ``start``."""
        body, n = self.body, len(self.body)
        search = start
        while search < self.no_close_from:
            end = body.find(_PARAM_CLOSE, search)
            if end < 0:
                self.no_close_from = search
                break
            after = _skip(body, end + len(_PARAM_CLOSE))
            if after == n or body.startswith((_PARAM_OPEN, _FUNC_CLOSE), after):
                return end, after
            search = end + 1
        # No closing tag that ends this value: the next parameter or function end does.
        ends = [p for p in (body.find(_PARAM_OPEN, start), body.find(_FUNC_CLOSE, start)) if p >= 0]
        if not ends:
            return None
        return min(ends), min(ends)


def parse_functions(body: str, tools: ToolBox) -> list[ParsedSegment] | None:
    """The calls of one ``<tool_call>`` body; ``None`` unless it is well-formed and declared."""
    scan = _Scan(body)
    n = len(body)
    calls: list[ParsedSegment] = []
    i = _skip(body, 0)
    while i < n:
        if not body.startswith(_FUNC_OPEN, i):
            return None
        gt = body.find(">", i + len(_FUNC_OPEN))
        if gt < 0:
            return None
        tool = tools.resolve(body[i + len(_FUNC_OPEN) : gt])
        if tool is None:
            return None
        pairs: list[tuple[str, str]] = []
        i = gt + 1
        while True:
            i = _skip(body, i)
            if i == n:
                break  # </function> missing before </tool_call>: the block ends the function
            if body.startswith(_FUNC_CLOSE, i):
                i += len(_FUNC_CLOSE)
                break
            if not body.startswith(_PARAM_OPEN, i):
                return None
            gt = body.find(">", i + len(_PARAM_OPEN))
            if gt < 0:
                return None
            key = body[i + len(_PARAM_OPEN) : gt].strip()
            found = scan.value_end(gt + 1)
            if not key or found is None:
                return None
            end, i = found
            pairs.append((key, _trim_newline(body[gt + 1 : end])))
        calls.append(ToolCall(name=tool.name, arguments=tools.typer(tool).arguments(pairs)))
        i = _skip(body, i)
    return calls or None


class Qwen3CoderFormat:
    openers: tuple[str, ...] = (TOOL_CALL_OPEN,)
    closers: tuple[str, ...] = (TOOL_CALL_CLOSE,)

    def parse(self, opener: str, body: str, closer: str | None, tools: ToolBox) -> list[ParsedSegment] | None:
        if closer is None:
            return None
        return parse_functions(body, tools)


_FORMAT = Qwen3CoderFormat()


def qwen3_coder(tools: Sequence[ToolSpec]) -> BlockToolParser:
    return BlockToolParser(_FORMAT, tools)


__all__ = ["Qwen3CoderFormat", "parse_functions", "qwen3_coder"]

register("qwen3_coder", qwen3_coder)
