"""Kimi K3 tool calls (``kimi_k3``, docs/model-formats.md B16)::

    <|open|>tools<|sep|>
    <|open|>call tool="get_weather" index="1"<|sep|>
    <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>
    <|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>
    <|close|>call<|sep|>
    <|close|>tools<|sep|>

(the layout above is for reading: the template writes no whitespace between the markers).
``<|open|>``, ``<|close|>`` and ``<|sep|>`` are special tokens; the ``tools`` channel follows
the ``response`` channel and is followed by ``<|close|>message<|sep|>``, which is dropped here.
The format, as vLLM's ``kimi_k3`` parser tests (vllm-project/vllm#50093) and the llama.cpp
``kimi-k3-text`` chat parser (pwilkin/llama.cpp#20) quote the template:

- a call is ``<|open|>call tool="NAME" index="N"<|sep|>`` … ``<|close|>call<|sep|>``; attribute
  values are escaped (``&`` as ``&amp;``, ``"`` as ``&quot;``) and unescaped here;
- an argument is ``<|open|>argument key="K" type="T"<|sep|>VALUE<|close|>argument<|sep|>``:
  ``type="string"`` marks the raw text of a string; any other type (number, boolean, null,
  object, array) is JSON, typed here by the schema like the other markup families (SPEC P5);
- a call may instead carry one JSON object: ``<|open|>json type="object"<|sep|>{…}<|close|>json<|sep|>``.

The template writes string values raw, so a value may quote the format's own markup (SPEC
P5). The tools channel is the message's last, so the section runs to the last
``<|close|>tools<|sep|>`` of the output, and inside it a value runs to the
``<|close|>argument<|sep|>`` that structurally ends it: one followed by the next argument, or
by ``<|close|>call<|sep|>`` that is itself followed by the next call or the section's end (where
no closer is followed so, because the model wrote text between calls, the last one before the
next call that ``<|close|>call<|sep|>`` follows; that text is released). Each
call that is malformed or names an undeclared tool is released as text, the others stay; a
section with no call is released whole (SPEC P4), an empty one is dropped. A section cut off
by the end of the output keeps its complete calls, as DSML does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from accord.pipeline.segments import Content, ParsedSegment, ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._blocks import BlockMarkup, BlockToolParser, Reopen, ToolBox, skip_space
from accord.pipeline.tools.markup import K3_END_OF_MESSAGE as END_OF_MESSAGE
from accord.pipeline.tools.markup import K3_MESSAGE_CLOSE, K3_TOOLS_CLOSE, K3_TOOLS_OPEN

_SEP = "<|sep|>"
_CALL_OPEN, _CALL_CLOSE = "<|open|>call", "<|close|>call<|sep|>"
_ARG_OPEN, _ARG_CLOSE = "<|open|>argument", "<|close|>argument<|sep|>"
_JSON_OPEN, _JSON_CLOSE = "<|open|>json", "<|close|>json<|sep|>"
_ATTRS = re.compile(r'\s+(?:\w+="[^"]*"\s*)*')
_ATTR = re.compile(r'(\w+)="([^"]*)"')


def _header(body: str, i: int, tag: str) -> tuple[dict[str, str], int] | None:
    """The attributes of ``<|open|>TAG attrs<|sep|>`` at ``i`` and where its content starts."""
    start = i + len(tag)
    sep = body.find(_SEP, start)
    if sep < 0:
        return None
    matched = _ATTRS.fullmatch(body, start, sep)
    if matched is None:
        return None
    attrs = {k: v.replace("&quot;", '"').replace("&amp;", "&") for k, v in _ATTR.findall(body, start, sep)}
    return attrs, sep + len(_SEP)


class _Scan:
    """Structural searches over one section body, each answer remembered.

    Whether a closer at a position ends a value depends only on what follows it, so the first
    one that does, from any start, is the answer a search from an earlier start found, as long
    as that answer lies at or after the start: no stretch of the body is read twice.
    """

    def __init__(self, body: str) -> None:
        self.body = body
        self._found: dict[str, tuple[int, int | None]] = {}

    def call_ends(self, at: int) -> bool:
        """Whether a ``<|close|>call<|sep|>`` at ``at`` is followed by the next call or the section's end."""
        after = skip_space(self.body, at + len(_CALL_CLOSE))
        return after == len(self.body) or self.body.startswith(_CALL_OPEN, after)

    def _first(self, key: str, closer: str, start: int, ends: Callable[[int], bool]) -> int | None:
        known = self._found.get(key)
        if known is not None and known[0] <= start and (known[1] is None or start <= known[1]):
            return known[1]
        search = start
        while True:
            at = self.body.find(closer, search)
            if at < 0:
                self._found[key] = (start, None)
                return None
            if ends(at):
                self._found[key] = (start, at)
                return at
            search = at + 1

    def value_end(self, start: int, closer: str) -> int | None:
        """The closer that ends a value from ``start``.

        The one that the next argument follows, or the call's end and then the next call or the
        section's end. Where no closer is followed so (text the model wrote between calls), the
        last one before the next call that the call's end follows.
        """
        body = self.body

        def ends(at: int) -> bool:
            after = skip_space(body, at + len(closer))
            if closer == _ARG_CLOSE and body.startswith(_ARG_OPEN, after):
                return True
            return body.startswith(_CALL_CLOSE, after) and self.call_ends(after)

        found = self._first(closer, closer, start, ends)
        if found is not None:
            return found
        # Text between calls: the last closer that the call's end follows, before the next call.
        limit = body.find(_CALL_OPEN, start)
        at = body.rfind(closer, start, limit if limit >= 0 else len(body))
        while at >= 0 and not body.startswith(_CALL_CLOSE, skip_space(body, at + len(closer))):
            at = body.rfind(closer, start, at)
        return at if at >= 0 else None

    def call_end(self, start: int) -> int | None:
        """The first call closer from ``start`` that the next call or the section's end follows."""
        return self._first(_CALL_CLOSE, _CALL_CLOSE, start, self.call_ends)


def _call(scan: _Scan, i: int, tools: ToolBox) -> tuple[ToolCall | None, int] | None:
    """The call whose header is at ``i`` (``None`` if undeclared) and where it ends; ``None`` if malformed."""
    body = scan.body
    head = _header(body, i, _CALL_OPEN)
    if head is None or "tool" not in head[0]:
        return None
    attrs, i = head
    tool = tools.resolve(attrs["tool"])
    i = skip_space(body, i)
    if body.startswith(_JSON_OPEN, i):
        opened = _header(body, i, _JSON_OPEN)
        end = scan.value_end(opened[1], _JSON_CLOSE) if opened else None
        if opened is None or end is None:
            return None
        try:
            obj = json.loads(body[opened[1] : end])
        except ValueError:
            return None
        if not isinstance(obj, dict):
            return None
        i = skip_space(body, end + len(_JSON_CLOSE)) + len(_CALL_CLOSE)
        return (ToolCall(name=tool.name, arguments=json.dumps(obj, ensure_ascii=False)) if tool else None), i
    pairs: list[tuple[str, str]] = []
    raw_strings: set[str] = set()
    while not body.startswith(_CALL_CLOSE, i):
        opened = _header(body, i, _ARG_OPEN) if body.startswith(_ARG_OPEN, i) else None
        if opened is None or not opened[0].get("key"):
            return None
        end = scan.value_end(opened[1], _ARG_CLOSE)
        if end is None:
            return None
        key = opened[0]["key"]
        pairs.append((key, body[opened[1] : end]))
        if opened[0].get("type", "string") == "string":
            raw_strings.add(key)
        i = skip_space(body, end + len(_ARG_CLOSE))
    i += len(_CALL_CLOSE)
    if tool is None:
        return None, i
    return ToolCall(name=tool.name, arguments=tools.typer(tool).arguments(pairs, raw_strings)), i


def _calls(body: str, tools: ToolBox, out: list[ParsedSegment]) -> None:
    """The calls of a section body, and the text of each that is malformed or undeclared."""
    scan = _Scan(body)
    n = len(body)
    i = 0
    while i < n:
        start = body.find(_CALL_OPEN, i)
        if start < 0:
            break
        if body[i:start].strip():
            out.append(Content(text=body[i:start]))
        parsed = _call(scan, start, tools)
        if parsed is None:
            end = scan.call_end(start)
            i = n if end is None else end + len(_CALL_CLOSE)
            out.append(Content(text=body[start:i]))
            continue
        call, i = parsed
        out.append(call if call is not None else Content(text=body[start:i]))
    if body[i:].strip():
        out.append(Content(text=body[i:]))


def _without_message_end(text: str) -> str:
    """``text`` less the message's end (and the whitespace around it) at its end, if there."""
    stripped = text.rstrip()
    found = False
    for marker in (END_OF_MESSAGE, K3_MESSAGE_CLOSE):
        if stripped.endswith(marker):
            stripped = stripped[: -len(marker)].rstrip()
            found = True
    return stripped if found else text


def parse_section(body: str, tools: ToolBox) -> list[ParsedSegment] | None:
    """Calls and released text of the rest of an output after ``<|open|>tools<|sep|>``.

    The tools channel is the message's last: it ends at the last ``<|close|>tools<|sep|>``
    (the message's end may follow); what else follows that closer is text. Without one the
    section was cut off. ``None`` when it holds no call; ``[]`` when it is empty.
    """
    out: list[ParsedSegment] = []
    close = body.rfind(K3_TOOLS_CLOSE)
    rest = ""
    if close >= 0:
        rest = _without_message_end(body[close + len(K3_TOOLS_CLOSE) :])
        body = body[:close]
    else:
        body = _without_message_end(body)  # cut off, or the model wrote the message's end instead
    if not body.strip():
        return [Content(text=rest)] if rest else []
    _calls(body, tools, out)
    if not any(isinstance(s, ToolCall) for s in out):
        return None
    if rest:
        out.append(Content(text=rest))
    return out


class KimiK3Format(BlockMarkup):
    """The ``tools`` channel is the block, and it runs to the end of the output.

    The channel is the message's last, so its real closer is the last one: the format has no
    closer the engine watches for (a ``<|close|>tools<|sep|>`` in the stream may be quoted in a
    value), and the section is parsed whole at the end. Calls are reported whole anyway, and
    nothing but the message's end follows them, so they arrive no later for it.
    """

    openers: tuple[str, ...] = (K3_TOOLS_OPEN,)
    inner: tuple[str, ...] = (_ARG_OPEN,)

    def reopens(self, opener: str, marker: str, tail: str, last_inner: str | None) -> Reopen:
        # Before any argument a new opener restarts the section; after one it is quoted.
        return Reopen.DATA if last_inner is not None else Reopen.RESTART

    def parse(self, opener: str, body: str, closer: str | None, tools: ToolBox) -> list[ParsedSegment] | None:
        return parse_section(body, tools)


_FORMAT = KimiK3Format()


def kimi_k3(tools: Sequence[ToolSpec]) -> BlockToolParser:
    return BlockToolParser(_FORMAT, tools)


__all__ = ["KimiK3Format", "kimi_k3", "parse_section"]

register("kimi_k3", kimi_k3)
