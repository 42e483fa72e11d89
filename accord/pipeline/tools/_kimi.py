"""Kimi-K2 calls (docs/model-formats.md B9).

``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>…<|tool_calls_section_end|>``
(the section markers also come spelled ``tool_call_section``). The model's id
``functions.NAME:IDX`` is the call's ``call_id``: the model expects to see that same id on
the tool result, so the item tracker uses it (or maps it) rather than minting one.

Each call is reported when its ``<|tool_call_end|>`` arrives, so calls before a cut-off
section survive (dynamo #8208), and a call whose end marker never came is still reported at
the end when its arguments are complete. The section markers are special tokens, so they are
dropped wherever they stand: an empty section, or one with only noise in it, shows no markup
(the noise is kept as text).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from accord.pipeline.segments import ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._callformat import CallFormat, resolve
from accord.pipeline.tools._jsoncalls import JsonCallParser
from accord.pipeline.tools._jsonscan import UNDECODED, is_object
from accord.pipeline.tools.markup import (
    KIMI_CALL_BEGIN,
    KIMI_CALL_END,
    KIMI_SECTION_BEGINS,
    KIMI_SECTION_ENDS,
)
from accord.pipeline.tools.toolbox import ToolBox

ARGUMENT_BEGIN = "<|tool_call_argument_begin|>"
_HEADER = re.compile(r"\s*(?P<id>[^\s<>{}]+)\s*" + re.escape(ARGUMENT_BEGIN) + r"\s*")
_ID = re.compile(r"(?:functions\.)?(?P<name>.+):\d+")


class KimiFormat(CallFormat):
    openers: tuple[str, ...] = (KIMI_CALL_BEGIN,)
    closers: tuple[str, ...] = (KIMI_CALL_END,)
    section_begins: tuple[str, ...] = KIMI_SECTION_BEGINS
    section_ends: tuple[str, ...] = KIMI_SECTION_ENDS
    section_markers_are_tokens = True
    soft_closers: tuple[str, ...] = KIMI_SECTION_ENDS
    header_only = True

    @staticmethod
    def _named(header: str, tools: ToolBox) -> tuple[str, str] | None:
        """The declared name and the model's id a header stands for."""
        m = _HEADER.fullmatch(header)
        if m is None:
            return None
        call_id = m.group("id")
        named = _ID.fullmatch(call_id)
        name = resolve(named.group("name") if named else call_id, tools)
        return None if name is None else (name, call_id)

    def calls(
        self,
        opener: str,
        header: str,
        payload: str | None,
        tools: ToolBox,
        decoded: Any = UNDECODED,
    ) -> list[ToolCall] | None:
        named = self._named(header, tools)
        if named is None:
            return None
        name, call_id = named
        if payload is None:
            arguments = "{}"
        elif is_object(payload, decoded):
            arguments = payload
        else:
            return None
        return [ToolCall(name=name, arguments=arguments, call_id=call_id)]


_FORMAT = KimiFormat()


def kimi_k2(tools: Sequence[ToolSpec]) -> JsonCallParser:
    return JsonCallParser(_FORMAT, tools)


register("kimi_k2", kimi_k2)
