"""Qwen3-Coder / Qwen3.5 XML tool calls (``qwen3_coder``, docs/model-formats.md B8)::

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
the block, so it may quote that tag; a ``<parameter=`` that begins a line before that closing
tag ends the value (the model forgot ``</parameter>``), and when no such ``</parameter>`` exists
the value ends at the next ``<parameter=`` or ``</function>``. A block that is not
functions and parameters only, or names an undeclared tool, is released as text.
"""

from __future__ import annotations

from collections.abc import Sequence

from accord.pipeline.segments import ParsedSegment, ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._blocks import BlockMarkup, BlockToolParser, Reopen, ToolBox, skip_space
from accord.pipeline.tools.markup import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

_FUNC_OPEN, _FUNC_CLOSE = "<function=", "</function>"
_PARAM_OPEN, _PARAM_CLOSE = "<parameter=", "</parameter>"


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
        self.next_param = -2  # the next "\n<parameter=" at or after the last search; -1: none

    def _param_line(self, start: int) -> int:
        """The next ``<parameter=`` that begins a line, at or after ``start``; -1 if none."""
        if self.next_param == -2 or (0 <= self.next_param < start):
            at = self.body.find("\n" + _PARAM_OPEN, start)
            self.next_param = at + 1 if at >= 0 else -1
        return self.next_param

    def value_end(self, start: int) -> tuple[int, int] | None:
        """(end of the value, where parsing resumes) for a value starting at ``start``.

        A ``<parameter=`` at the start of a line before the value's closing tag ends the
        value there (the model left out ``</parameter>``).
        """
        body, n = self.body, len(self.body)
        line = self._param_line(start)
        search = start
        while search < self.no_close_from:
            end = body.find(_PARAM_CLOSE, search)
            if end < 0:
                self.no_close_from = search
                break
            if 0 <= line < end:
                return line, line
            after = skip_space(body, end + len(_PARAM_CLOSE))
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
    i = skip_space(body, 0)
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
            i = skip_space(body, i)
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
        i = skip_space(body, i)
    return calls or None


class Qwen3CoderFormat(BlockMarkup):
    """``<tool_call>`` blocks, and bare ``<function=…>…</function>`` blocks without the wrapper.

    llama.cpp's template path makes the model write bare functions, alone or several in a
    row, and a model sometimes leaves out the ``<tool_call>`` opener: a ``</tool_call>`` right
    after a bare function is then dropped. Markup quoted inside a value is data: a
    ``</tool_call>`` ends its block only after ``</function>`` (or a last ``</parameter>``
    whose ``</function>`` is missing), a bare function's ``</function>`` only after a
    ``</parameter>`` (or right after a header without parameters), and once a parameter has
    begun an opener inside the block is never a restart.
    """

    openers: tuple[str, ...] = (TOOL_CALL_OPEN, _FUNC_OPEN)
    closers: tuple[str, ...] = (TOOL_CALL_CLOSE, _FUNC_CLOSE)
    inner: tuple[str, ...] = (_PARAM_OPEN,)
    trailer: str | None = TOOL_CALL_CLOSE
    bare_openers: frozenset[str] = frozenset({_FUNC_OPEN})

    def closers_for(self, opener: str) -> frozenset[str]:
        return frozenset({TOOL_CALL_CLOSE if opener == TOOL_CALL_OPEN else _FUNC_CLOSE})

    def ends_block(self, opener: str, tail: str, whole: bool, last_inner: str | None) -> bool:
        end = tail.rstrip()
        if opener == TOOL_CALL_OPEN:
            return end.endswith((_FUNC_CLOSE, _PARAM_CLOSE)) or (whole and not end)
        return end.endswith(_PARAM_CLOSE) or (whole and "<" not in end)

    def reopens(self, opener: str, marker: str, tail: str, last_inner: str | None) -> Reopen:
        # Functions are what a <tool_call> block holds; after a parameter began, any opener
        # is quoted inside its value.
        if last_inner is not None or (opener == TOOL_CALL_OPEN and marker == _FUNC_OPEN):
            return Reopen.DATA
        return Reopen.RESTART

    def parse(self, opener: str, body: str, closer: str | None, tools: ToolBox) -> list[ParsedSegment] | None:
        if closer is None:
            return None
        if opener == _FUNC_OPEN:
            return parse_functions(_FUNC_OPEN + body + _FUNC_CLOSE, tools)
        return parse_functions(body, tools)


_FORMAT = Qwen3CoderFormat()


def qwen3_coder(tools: Sequence[ToolSpec]) -> BlockToolParser:
    return BlockToolParser(_FORMAT, tools)


__all__ = ["Qwen3CoderFormat", "parse_functions", "qwen3_coder"]

register("qwen3_coder", qwen3_coder)
