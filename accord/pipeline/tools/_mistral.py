"""Mistral calls, both tokenizer generations (protocol.md B12).

- pre-v11: ``[TOOL_CALLS][{"name": …, "arguments": {…}}, …]`` (a single object is read too);
  an ``id`` member becomes the call id;
- v11+: ``[TOOL_CALLS]name[ARGS]{…}`` repeated per call; ``[ARGS]`` may be missing (the name
  ends at the first ``{``) and ``[CALL_ID]id`` may follow the name.

There is no closer: a call ends with its JSON. A pre-v11 list is one block: it is reported
only when every element is a valid call to a declared tool, otherwise all of it is text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from accord.pipeline.segments import ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._callformat import CallFormat, resolve
from accord.pipeline.tools._hermes import call_from_members, wrapper_call
from accord.pipeline.tools._jsoncalls import JsonCallParser
from accord.pipeline.tools._jsonscan import UNDECODED, array_elements, is_object, object_members

_V11_HEADER = re.compile(
    r"\s*(?P<name>[^\s\[\]{}]+?)\s*(?:\[CALL_ID\]\s*(?P<id>[^\s\[\]{}]+)\s*)?(?:\[ARGS\]\s*)?"
)


class MistralFormat(CallFormat):
    openers = ("[TOOL_CALLS]",)
    array_payload = True
    header_cap = 128

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
        if header.strip():
            m = _V11_HEADER.fullmatch(header)
            if m is None or not is_object(payload, decoded):
                return None
            name = resolve(m.group("name"), tools)
            if name is None:
                return None
            return [ToolCall(name=name, arguments=payload.strip(), call_id=m.group("id"))]
        if payload.lstrip().startswith("{"):
            call = wrapper_call(payload, tools, call_id_key="id")
            return None if call is None else [call]
        return self._list(payload, tools)

    def _list(self, payload: str, tools: Sequence[ToolSpec]) -> list[ToolCall] | None:
        elements = array_elements(payload)
        if not elements:
            return None
        calls: list[ToolCall] = []
        for _, raw in elements:
            members = object_members(raw)
            call = None if members is None else call_from_members(members, tools, call_id_key="id")
            if call is None:
                return None
            calls.append(call)
        return calls


_FORMAT = MistralFormat()


def mistral(tools: Sequence[ToolSpec]) -> JsonCallParser:
    return JsonCallParser(_FORMAT, tools)


register("mistral", mistral)
