"""GLM-4.5/4.6 (``glm45``) and GLM-4.7/5 (``glm47``) tool calls (docs/model-formats.md B1, B2).

One engine for both; they differ only in how a call body splits into the name and the
argument text. GLM-4.5 writes the name on its own line; GLM-4.7 removed that newline::

    <tool_call>get_weather\\n<arg_key>city</arg_key>\\n<arg_value>Paris</arg_value>\\n</tool_call>
    <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>
    <tool_call>get_time</tool_call>

A call is delivered only when its argument text is complete key/value pairs; otherwise its
markup is released as text. A value runs to the first ``</arg_value>`` followed by the next
``<arg_key>`` or the end of the call, so a value may quote that tag (SPEC P5). Between tags
the model may put whitespace or a literal backslash-n, as both reference parsers accept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from accord.pipeline.segments import Content, ParsedSegment, ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._blocks import BlockMarkup, BlockToolParser, Reopen, ToolBox
from accord.pipeline.tools.markup import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

_KEY_OPEN, _KEY_CLOSE = "<arg_key>", "</arg_key>"
_VALUE_OPEN, _VALUE_CLOSE = "<arg_value>", "</arg_value>"
_GAP = re.compile(r"(?:\s|\\n)*")
_NAME_EDGE = re.compile(r"^(?:\s|\\n)+|(?:\s|\\n)+$")


def _skip(text: str, i: int) -> int:
    match = _GAP.match(text, i)
    return match.end() if match else i


def _clean_name(raw: str) -> str:
    return _NAME_EDGE.sub("", raw)


def parse_pairs(args: str) -> list[tuple[str, str]] | None:
    """The key/value pairs of GLM argument text; ``None`` unless it is complete pairs only."""
    pairs: list[tuple[str, str]] = []
    n = len(args)
    i = _skip(args, 0)
    while i < n:
        if not args.startswith(_KEY_OPEN, i):
            return None
        key_end = args.find(_KEY_CLOSE, i + len(_KEY_OPEN))
        if key_end < 0:
            return None
        key = args[i + len(_KEY_OPEN) : key_end].strip()
        i = _skip(args, key_end + len(_KEY_CLOSE))
        if not key or not args.startswith(_VALUE_OPEN, i):
            return None
        start = search = i + len(_VALUE_OPEN)
        while True:
            end = args.find(_VALUE_CLOSE, search)
            if end < 0:
                if search != start:
                    return None  # a </arg_value> followed by neither a key nor the end
                # GLM-4.7 leaves out the last </arg_value>: the block's end ends the value.
                end = after = n
                break
            after = _skip(args, end + len(_VALUE_CLOSE))
            if after == n or args.startswith(_KEY_OPEN, after):
                break
            search = end + 1  # a quoted </arg_value>: the value goes on
        pairs.append((key, args[start:end]))
        i = after
    return pairs


def split_glm45(body: str) -> tuple[str, str]:
    """Name up to the first newline (or literal ``\\n``), or up to ``<arg_key>`` if that comes first."""
    lead = _skip(body, 0)  # layout before the name is not a name
    cut = len(body)
    for mark in ("\n", "\\n", _KEY_OPEN):
        pos = body.find(mark, lead)
        if 0 <= pos < cut:
            cut = pos
    return body[:cut], body[cut:]


def split_glm47(body: str) -> tuple[str, str]:
    """Name is everything before the first ``<arg_key>`` (or the whole body: no arguments)."""
    pos = body.find(_KEY_OPEN)
    return (body, "") if pos < 0 else (body[:pos], body[pos:])


class GlmFormat(BlockMarkup):
    """GLM's markup; a value runs to the closer that structurally ends it.

    While a value is open (an ``<arg_value>`` without its ``</arg_value>``) a ``</tool_call>``
    or ``<tool_call>`` is quoted data, as a ``write_file`` of this very format writes it, with
    one exception that GLM-4.7 produces: a value whose ``</arg_value>`` is missing ends at a
    ``</tool_call>`` that the next ``<tool_call>`` follows (whitespace aside), or at the last
    ``</tool_call>`` of an output that ends inside the value.
    """

    openers: tuple[str, ...] = (TOOL_CALL_OPEN,)
    closers: tuple[str, ...] = (TOOL_CALL_CLOSE,)
    inner: tuple[str, ...] = (_VALUE_OPEN, _VALUE_CLOSE)

    def ends_block(self, opener: str, tail: str, whole: bool, last_inner: str | None) -> bool:
        del opener, tail, whole
        return last_inner != _VALUE_OPEN

    def reopens(self, opener: str, marker: str, tail: str, last_inner: str | None) -> Reopen:
        del opener, marker
        if last_inner != _VALUE_OPEN:
            return Reopen.RESTART
        return Reopen.SPLIT if tail.rstrip().endswith(TOOL_CALL_CLOSE) else Reopen.DATA

    def __init__(self, split: Callable[[str], tuple[str, str]]) -> None:
        self._split = split

    def parse(self, opener: str, body: str, closer: str | None, tools: ToolBox) -> list[ParsedSegment] | None:
        if closer is None:
            # Cut off inside an open value: the value's missing </arg_value> was the end of
            # the call at its last </tool_call>, and what follows that is text.
            cut = body.rfind(TOOL_CALL_CLOSE)
            if cut < 0:
                return None
            call = self.parse(opener, body[:cut], TOOL_CALL_CLOSE, tools)
            if call is None:
                return None
            rest = body[cut + len(TOOL_CALL_CLOSE) :]
            return [*call, Content(text=rest)] if rest else call
        raw_name, args = self._split(body)
        # Layout around the name (a newline, or a literal backslash-n) is not part of it.
        tool = tools.resolve(raw_name, _clean_name)
        if tool is None:
            return None
        pairs = parse_pairs(args)
        if pairs is None:
            return None
        return [ToolCall(name=tool.name, arguments=tools.typer(tool).arguments(pairs))]


_GLM45 = GlmFormat(split_glm45)
_GLM47 = GlmFormat(split_glm47)


def glm45(tools: Sequence[ToolSpec]) -> BlockToolParser:
    return BlockToolParser(_GLM45, tools)


def glm47(tools: Sequence[ToolSpec]) -> BlockToolParser:
    return BlockToolParser(_GLM47, tools)


__all__ = ["GlmFormat", "glm45", "glm47", "parse_pairs", "split_glm45", "split_glm47"]

register("glm45", glm45)
register("glm47", glm47)
