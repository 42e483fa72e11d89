"""Hermes / Qwen2.5 / Qwen3 calls: ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` (docs/model-formats.md B7).

The tags are single tokens in Qwen but plain text in some Hermes fine-tunes, so they may
arrive split anywhere. The payload is a wrapper object: ``name`` plus ``arguments`` (an
object, an object encoded as a string, ``null`` or absent for a call without arguments);
``parameters`` is read as a synonym. A ``</tool_call>`` quoted inside a string argument is
part of the argument.

A call streams its arguments when the wrapper starts the usual way, ``{"name": "…",
"arguments": {``, and the name is a declared tool: the arguments object is then the text
between that ``{`` and its matching ``}``. Any other layout (``parameters``, arguments before
the name, arguments encoded as a string) is reported whole once complete.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from accord.pipeline.segments import ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._callformat import UNDECIDED, CallFormat, Opening, resolve
from accord.pipeline.tools._jsoncalls import JsonCallParser
from accord.pipeline.tools._jsonscan import UNDECODED, arguments_text, object_members
from accord.pipeline.tools.markup import TOOL_CALL_CLOSE, TOOL_CALL_OPEN


def wrapper_call(
    payload: str, tools: Sequence[ToolSpec], *, call_id_key: str | None = None
) -> ToolCall | None:
    """One call from a ``{"name": …, "arguments"|"parameters": …}`` object, or ``None``."""
    members = object_members(payload)
    if members is None:
        return None
    return call_from_members(members, tools, call_id_key=call_id_key)


def call_from_members(
    members: dict[str, tuple[object, str]], tools: Sequence[ToolSpec], *, call_id_key: str | None = None
) -> ToolCall | None:
    name_member = members.get("name")
    if name_member is None or not isinstance(name_member[0], str):
        return None
    name = resolve(name_member[0], tools)
    if name is None:
        return None
    arguments = arguments_text(members.get("arguments", members.get("parameters")))
    if arguments is None:
        return None
    call_id = None
    if call_id_key is not None:
        id_member = members.get(call_id_key)
        if id_member is not None and isinstance(id_member[0], str) and id_member[0]:
            call_id = id_member[0]
    return ToolCall(name=name, arguments=arguments, call_id=call_id)


# The head of a wrapper whose arguments stream, as a sequence of pieces each of which a
# prefix may end inside (JSON whitespace only: anything else would not scan as JSON).
_WS = "[ \t\r\n]*"
_NAME = r'(?:[^"\\]|\\.)*'
_HEAD_PIECES = [
    r"\{",
    _WS,
    *map(re.escape, '"name"'),
    _WS,
    ":",
    _WS,
    '"',
    _NAME + r"\\?",
    '"',
    _WS,
    ",",
    _WS,
    *map(re.escape, '"arguments"'),
    _WS,
    ":",
    _WS,
]
_ARGS_HEAD = re.compile(
    r"\{"
    + _WS
    + '"name"'
    + _WS
    + ":"
    + _WS
    + f'"({_NAME})"'
    + _WS
    + ","
    + _WS
    + '"arguments"'
    + _WS
    + ":"
    + _WS
    + r"\{",
    re.DOTALL,
)


def _prefixes(pieces: Sequence[str]) -> re.Pattern[str]:
    """A pattern whose full matches are the prefixes of what ``pieces`` match in sequence."""
    pattern = ""
    for piece in reversed(pieces):
        pattern = f"{piece}(?:{pattern})?" if pattern else piece
    return re.compile(pattern, re.DOTALL)


_ARGS_HEAD_PREFIX = _prefixes(_HEAD_PIECES)


def wrapper_opening(head: str, tools: Sequence[ToolSpec]) -> Opening | Literal["undecided"] | None:
    """The streamed call a wrapper starting with ``head`` opens, if it starts the usual way."""
    m = _ARGS_HEAD.match(head)
    if m is None:
        return UNDECIDED if _ARGS_HEAD_PREFIX.fullmatch(head) else None
    try:
        raw_name = json.loads(f'"{m.group(1)}"')
    except ValueError:
        return None
    name = resolve(raw_name, tools)
    return None if name is None else Opening(name, None, m.end() - 1)


class HermesFormat(CallFormat):
    openers = (TOOL_CALL_OPEN,)
    closers = (TOOL_CALL_CLOSE,)
    streams = True

    def stream_start(
        self, opener: str, header: str, head: str, tools: Sequence[ToolSpec]
    ) -> Opening | Literal["undecided"] | None:
        return wrapper_opening(head, tools)

    def header_prefix_ok(self, opener: str, header: str) -> bool:
        return not header.strip()

    def calls(
        self,
        opener: str,
        header: str,
        payload: str | None,
        tools: Sequence[ToolSpec],
        decoded: Any = UNDECODED,
    ) -> list[ToolCall] | None:
        if payload is None:
            return None
        call = wrapper_call(payload, tools)
        return None if call is None else [call]


_FORMAT = HermesFormat()


def hermes(tools: Sequence[ToolSpec]) -> JsonCallParser:
    return JsonCallParser(_FORMAT, tools)


register("hermes", hermes)
