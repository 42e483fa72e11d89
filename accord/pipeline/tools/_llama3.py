"""Llama 3.x JSON calls: bare ``{"name": …, "parameters": {…}}`` objects (docs/model-formats.md B11).

A call has no opener of its own: the output starts with it (after whitespace), or it
follows ``<|python_tag|>``, and further calls follow a call after ``;``. So a ``{`` at the
start is held until the object ends (or until its first key shows it is not a call: a JSON
answer such as ``{"answer": …}`` is text as soon as its first key is read). ``arguments`` is
read as a synonym of ``parameters``; a ``"type": "function"`` member is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from accord.pipeline.segments import ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._callformat import CallFormat
from accord.pipeline.tools._hermes import call_from_members
from accord.pipeline.tools._jsoncalls import JsonCallParser
from accord.pipeline.tools._jsonscan import UNDECODED, object_members
from accord.pipeline.tools.toolbox import ToolBox

_FIRST_KEYS = frozenset({"name", "type"})
_KEY = re.compile(r'\{[ \t\r\n]*"([^"\\]*)"')
_KEY_PREFIX = re.compile(r'\{[ \t\r\n]*(?:"[^"\\]*)?')


class Llama3Format(CallFormat):
    openers: tuple[str, ...] = ("<|python_tag|>",)
    bare_calls = True
    checks_payload_prefix = True

    def header_prefix_ok(self, opener: str, header: str) -> bool:
        return not header.strip()

    def payload_prefix_ok(self, head: str) -> bool | None:
        m = _KEY.match(head)
        if m is not None:
            return m.group(1) in _FIRST_KEYS
        return None if _KEY_PREFIX.fullmatch(head) is not None else False

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
        members = object_members(payload)
        if members is None:
            return None
        kind = members.get("type")
        if kind is not None and kind[0] != "function":
            return None
        call = call_from_members(members, tools)
        return None if call is None else [call]


_FORMAT = Llama3Format()


def llama3_json(tools: Sequence[ToolSpec]) -> JsonCallParser:
    return JsonCallParser(_FORMAT, tools)


register("llama3_json", llama3_json)
