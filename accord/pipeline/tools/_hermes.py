"""Hermes / Qwen2.5 / Qwen3 calls: ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` (docs/model-formats.md B7).

The tags are single tokens in Qwen but plain text in some Hermes fine-tunes, so they may
arrive split anywhere. The payload is a wrapper object: ``name`` plus ``arguments`` (an
object, an object encoded as a string, ``null`` or absent for a call without arguments);
``parameters`` is read as a synonym. A ``</tool_call>`` quoted inside a string argument is
part of the argument.

A call is reported whole once its closer arrives and the wrapper validates (SPEC P4).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from accord.pipeline.segments import ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._callformat import CallFormat
from accord.pipeline.tools._jsoncalls import JsonCallParser
from accord.pipeline.tools._jsonscan import UNDECODED, arguments_text, object_members, value_at
from accord.pipeline.tools.markup import TOOL_CALL_CLOSE, TOOL_CALL_OPEN
from accord.pipeline.tools.toolbox import ToolBox

#: A wrapper as models lay it out, with or without spaces: name first (Qwen's templates, and
#: ``json.dumps`` of ``{"name", "arguments"}``), up to the arguments' value; or arguments first, the
#: name after them (the example in NousResearch's Hermes function-calling prompt). The name is one
#: that needs no escape.
_NAME_FIRST = re.compile(r'\{"name": ?"([^"\\\x00-\x1f]*)", ?"arguments": ?')
_ARGUMENTS_FIRST = re.compile(r'\{"arguments": ?')
_NAME_LAST = re.compile(r', ?"name": ?"([^"\\\x00-\x1f]*)"[ \t\r\n]*\}[ \t\r\n]*')


def wrapper_call(payload: str, tools: ToolBox, *, call_id_key: str | None = None) -> ToolCall | None:
    """One call from a ``{"name": …, "arguments"|"parameters": …}`` object, or ``None``.

    The two usual layouts are read with one C decode, of the arguments: the name needs no escape,
    so it is its own text, and the two members make the whole object, so there is no third member
    and no repeated key. Any other layout is walked member by member.
    """
    raw_name, start, value, end = None, 0, None, -1
    if call_id_key is None:
        if (head := _NAME_FIRST.match(payload)) is not None:
            start = head.end()
            value, end = value_at(payload, start)
            if end >= 0 and payload[end:].strip(" \t\r\n") == "}":
                raw_name = head[1]
        elif (head := _ARGUMENTS_FIRST.match(payload)) is not None:
            start = head.end()
            value, end = value_at(payload, start)
            if end >= 0 and (tail := _NAME_LAST.fullmatch(payload, end)) is not None:
                raw_name = tail[1]
    if raw_name is not None:
        return _call(raw_name, (value, payload[start:end]), tools)
    members = object_members(payload)
    if members is None:
        return None
    return call_from_members(members, tools, call_id_key=call_id_key)


def call_from_members(
    members: dict[str, tuple[object, str]], tools: ToolBox, *, call_id_key: str | None = None
) -> ToolCall | None:
    name_member = members.get("name")
    if name_member is None or not isinstance(name_member[0], str):
        return None
    call_id = None
    if call_id_key is not None:
        id_member = members.get(call_id_key)
        if id_member is not None and isinstance(id_member[0], str) and id_member[0]:
            call_id = id_member[0]
    return _call(name_member[0], members.get("arguments", members.get("parameters")), tools, call_id)


def _call(
    raw_name: str, arguments: tuple[object, str] | None, tools: ToolBox, call_id: str | None = None
) -> ToolCall | None:
    """The call of a declared name with arguments that are an object, or ``None``."""
    tool = tools.resolve(raw_name)
    if tool is None:
        return None
    # An object is taken as written (``arguments_text``'s first case, without its call).
    text = arguments[1] if arguments is not None and type(arguments[0]) is dict else arguments_text(arguments)
    return None if text is None else ToolCall(name=tool.name, arguments=text, call_id=call_id)


class HermesFormat(CallFormat):
    openers: tuple[str, ...] = (TOOL_CALL_OPEN,)
    closers: tuple[str, ...] = (TOOL_CALL_CLOSE,)

    def header_prefix_ok(self, opener: str, header: str) -> bool:
        return not header.strip()

    def calls(
        self,
        opener: str,
        header: str,
        payload: str | None,
        tools: ToolBox,
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
