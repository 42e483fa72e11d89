"""DeepSeek-V3.2 DSML tool calls (``deepseek_v32``, docs/model-formats.md B6)::

    <｜DSML｜function_calls>
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
    <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

The ``｜DSML｜`` prefix is optional on every tag, and openers and closers may mix variants.
An invoke may instead carry one JSON object: ``<｜DSML｜invoke name="f">{"city": "Paris"}</｜DSML｜invoke>``.

``string="true"`` marks a raw string; otherwise the value is typed by the schema (SPEC P5).
A value runs to the first parameter closer followed by the next parameter or the end of the
invoke, so it may quote that tag. The engine hands over one whole section; each invoke in it
becomes a call, or, when malformed or undeclared, its markup is released as text (an invoke
opened again before it closed is abandoned as text there; an opener quoted inside a
parameter value is data unless a new parameter opens after it before the value closes). The
layout between invokes is
markup. A section with no call in it is released as text whole. A section cut off by the end
of the output keeps its complete calls and releases the unfinished invoke as text (dynamo
#8208: recover the complete calls up to EOF).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from accord.pipeline.segments import Content, ParsedSegment, ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._blocks import BlockMarkup, BlockToolParser, ToolBox, skip_space
from accord.pipeline.tools.markup import DSML_CLOSERS, DSML_OPENERS, DSML_V4_CLOSERS, DSML_V4_OPENERS

_P = "(?:｜DSML｜)?"
_INVOKE_START = re.compile(rf"<{_P}invoke\b")
_INVOKE_OPEN = re.compile(rf'<{_P}invoke\s+name\s*=\s*"([^"]*)"\s*>')
_INVOKE_CLOSE = re.compile(rf"</{_P}invoke\s*>")
_PARAM_OPEN = re.compile(rf"<{_P}parameter\b([^>]*)>")
_PARAM_START = re.compile(rf"<{_P}parameter\b")
_PARAM_CLOSE = re.compile(rf"</{_P}parameter\s*>")
_ATTR = re.compile(r'(\w+)\s*=\s*"([^"]*)"')


def _parameters(body: str) -> tuple[list[tuple[str, str]], set[str]] | None:
    """Pairs and the keys marked ``string="true"``; ``None`` unless parameters only."""
    pairs: list[tuple[str, str]] = []
    raw_strings: set[str] = set()
    n = len(body)
    i = skip_space(body, 0)
    while i < n:
        opened = _PARAM_OPEN.match(body, i)
        if opened is None:
            return None
        attrs = dict(_ATTR.findall(opened.group(1)))
        key = attrs.get("name", "").strip()
        if not key:
            return None
        search = opened.end()
        while True:
            closed = _PARAM_CLOSE.search(body, search)
            if closed is None:
                return None
            after = skip_space(body, closed.end())
            if after == n or _PARAM_START.match(body, after):
                break
            search = closed.start() + 1  # a quoted closer: the value goes on
        pairs.append((key, body[opened.end() : closed.start()]))
        if attrs.get("string", "").lower() == "true":
            raw_strings.add(key)
        i = after
    return pairs, raw_strings


def _invoke(name: str, body: str, tools: ToolBox) -> ToolCall | None:
    tool = tools.resolve(name)
    if tool is None:
        return None
    stripped = body.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except ValueError:
            return None
        if not isinstance(obj, dict):
            return None
        return ToolCall(name=tool.name, arguments=json.dumps(obj, ensure_ascii=False))
    parsed = _parameters(body)
    if parsed is None:
        return None
    pairs, raw_strings = parsed
    return ToolCall(name=tool.name, arguments=tools.typer(tool).arguments(pairs, raw_strings))


_VALUE_OPENS = ("<｜DSML｜parameter", "<parameter")
_VALUE_CLOSES = ("</｜DSML｜parameter", "</parameter")


def _last(body: str, markers: tuple[str, str], start: int, end: int) -> int:
    return max(body.rfind(markers[0], start, end), body.rfind(markers[1], start, end))


def _first(body: str, markers: tuple[str, str], start: int, end: int) -> int:
    """The first of ``markers`` in ``body[start:end]``, or ``end``."""
    found = [i for i in (body.find(m, start, end) for m in markers) if i >= 0]
    return min(found, default=end)


def _restart(body: str, head_end: int, close_start: int) -> re.Match[str] | None:
    """The first invoke opener before ``close_start`` that really restarts the invoke.

    An opener inside an open parameter value is data (a value that quotes the format),
    unless a new parameter opens after it before that value's closer: then the value was
    cut off and the invoke written again. Whether a value is open, and where the next
    closer and parameter opener are, are carried from one candidate to the next, so each
    stretch of the invoke is looked at a bounded number of times.
    """
    inside = False
    pos = search = head_end
    next_close = next_open = -1
    while True:
        restart = _INVOKE_START.search(body, search, close_start)
        if restart is None:
            return None
        r = restart.start()
        opened, closed = _last(body, _VALUE_OPENS, pos, r), _last(body, _VALUE_CLOSES, pos, r)
        if opened >= 0 or closed >= 0:
            inside = opened > closed
        if not inside:
            return restart
        if next_close < r:
            next_close = _first(body, _VALUE_CLOSES, r, close_start)
        if next_open < r:
            next_open = _first(body, _VALUE_OPENS, restart.end(), close_start)
        if next_open < next_close:
            return restart
        pos, search = r, restart.end()


def parse_section(body: str, tools: ToolBox) -> list[ParsedSegment] | None:
    """Calls and released text of one section body; ``None`` when it holds no call."""
    out: list[ParsedSegment] = []
    n = len(body)
    i = 0
    close_at: re.Match[str] | None = None  # cached: the next invoke closer at or after i
    while i < n:
        start = _INVOKE_START.search(body, i)
        if start is None:
            break
        if body[i : start.start()].strip():
            out.append(Content(text=body[i : start.start()]))
        opened = _INVOKE_OPEN.match(body, start.start())
        head_end = opened.end() if opened else start.end()
        if close_at is None or close_at.start() < head_end:
            close_at = _INVOKE_CLOSE.search(body, head_end)
        if close_at is None:
            # Cut off inside this invoke: its text is released, the complete calls stay.
            out.append(Content(text=body[start.start() :]))
            i = n
            break
        restart = _restart(body, head_end, close_at.start())
        if restart is not None:
            # Opened again before it closed: the abandoned prefix is text.
            out.append(Content(text=body[start.start() : restart.start()]))
            i = restart.start()
            continue
        call = _invoke(opened.group(1), body[head_end : close_at.start()], tools) if opened else None
        out.append(call if call is not None else Content(text=body[start.start() : close_at.end()]))
        i = close_at.end()
    if body[i:].strip():
        out.append(Content(text=body[i:]))
    if not any(isinstance(s, ToolCall) for s in out):
        return None
    return out


class DsmlFormat(BlockMarkup):
    openers: tuple[str, ...] = DSML_OPENERS
    closers: tuple[str, ...] = DSML_CLOSERS

    def parse(self, opener: str, body: str, closer: str | None, tools: ToolBox) -> list[ParsedSegment] | None:
        # Cut off or closed, a section reads the same: only one with a call survives.
        return parse_section(body, tools)


class DsmlV4Format(DsmlFormat):
    """DeepSeek V4: the section is ``<｜DSML｜tool_calls>`` (the V3.2 spelling is still read).

    The wrapper and the ``string="true|false"`` typing are as the V4 parsers of vLLM, SGLang
    and MLX-LM read them (their pull requests quote the model's output).
    """

    openers: tuple[str, ...] = (*DSML_V4_OPENERS, *DSML_OPENERS)
    closers: tuple[str, ...] = (*DSML_V4_CLOSERS, *DSML_CLOSERS)


_FORMAT = DsmlFormat()
_V4_FORMAT = DsmlV4Format()


def deepseek_v32(tools: Sequence[ToolSpec]) -> BlockToolParser:
    return BlockToolParser(_FORMAT, tools)


def deepseek_v4(tools: Sequence[ToolSpec]) -> BlockToolParser:
    return BlockToolParser(_V4_FORMAT, tools)


__all__ = ["DsmlFormat", "DsmlV4Format", "deepseek_v4", "deepseek_v32", "parse_section"]

register("deepseek_v32", deepseek_v32)
register("deepseek_v4", deepseek_v4)
