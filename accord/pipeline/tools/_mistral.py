"""Mistral calls, both tokenizer generations (docs/model-formats.md B12).

- pre-v11: ``[TOOL_CALLS][{"name": …, "arguments": {…}}, …]`` (a single object is read too);
  an ``id`` member becomes the call id;
- v11+: ``[TOOL_CALLS]name[ARGS]{…}`` repeated per call; ``[ARGS]`` may be missing (the name
  ends at the first ``{``) and ``[CALL_ID]id`` may follow the name.

There is no closer: a call ends with its JSON. A pre-v11 list is one block: it is reported
only when every element is a valid call to a declared tool, otherwise all of it is text.

Every call is reported whole once its JSON is complete and valid (SPEC P4); a pre-v11
list is all or nothing.
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
from accord.pipeline.tools.markup import MISTRAL_TOOL_CALLS
from accord.pipeline.tools.toolbox import ToolBox

_V11_HEADER = re.compile(
    r"\s*(?P<name>[^\s\[\]{}]+?)\s*(?:\[CALL_ID\]\s*(?P<id>[^\s\[\]{}]+)\s*)?(?:\[ARGS\]\s*)?"
)


class MistralFormat(CallFormat):
    openers: tuple[str, ...] = (MISTRAL_TOOL_CALLS,)
    opener_at_end_is_markup = True
    array_payload = True
    header_cap = 128

    @staticmethod
    def _v11(header: str, tools: ToolBox) -> tuple[str, str | None] | None:
        """The declared name and the model's id a v11 header stands for."""
        m = _V11_HEADER.fullmatch(header)
        if m is None:
            return None
        name = resolve(m.group("name"), tools)
        return None if name is None else (name, m.group("id"))

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
        if header.strip():
            named = self._v11(header, tools)
            if named is None or not is_object(payload, decoded):
                return None
            return [ToolCall(name=named[0], arguments=payload.strip(), call_id=named[1])]
        if payload.lstrip().startswith("{"):
            call = wrapper_call(payload, tools, call_id_key="id")
            return None if call is None else [call]
        return self._list(payload, tools)

    def _list(self, payload: str, tools: ToolBox) -> list[ToolCall] | None:
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
