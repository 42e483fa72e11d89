"""DeepSeek V3/R1 and V3.1 calls (docs/model-formats.md B4, B5).

Both write calls inside ``<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>``, each between
``<｜tool▁call▁begin｜>`` and ``<｜tool▁call▁end｜>``; they differ only in the call's header:

- ``deepseek_v3``: ``function<｜tool▁sep｜>NAME`` then the arguments in a ```` ```json ```` fence;
- ``deepseek_v31``: ``NAME<｜tool▁sep｜>`` then the raw arguments (a fence is tolerated).

Each call is reported when its own end marker arrives, so a whole call (or several) in one
chunk is as good as one split anywhere (vllm #48020). The name is the header up to the
separator only, so two calls never merge into one (vllm #25405).
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
    DEEPSEEK_CALL_BEGIN,
    DEEPSEEK_CALL_END,
    DEEPSEEK_SECTION_BEGIN,
    DEEPSEEK_SECTION_END,
    DEEPSEEK_SEP,
)
from accord.pipeline.tools.toolbox import ToolBox

SECTION_BEGIN = DEEPSEEK_SECTION_BEGIN
SECTION_END = DEEPSEEK_SECTION_END
CALL_BEGIN = DEEPSEEK_CALL_BEGIN
CALL_END = DEEPSEEK_CALL_END
SEP = DEEPSEEK_SEP

_FENCE_OPEN = r"(?:```[A-Za-z]*\s*)?"
_V3_HEADER = re.compile(r"\s*[A-Za-z_]*\s*" + SEP + r"\s*(?P<name>[^\s`<>{}]+)\s*" + _FENCE_OPEN)
_V31_HEADER = re.compile(r"\s*(?P<name>[^\s`<>{}]+)\s*" + SEP + r"\s*" + _FENCE_OPEN)


class DeepSeekFormat(CallFormat):
    openers: tuple[str, ...] = (CALL_BEGIN,)
    closers: tuple[str, ...] = (CALL_END,)
    soft_closers: tuple[str, ...] = (SECTION_END,)
    section_begins: tuple[str, ...] = (SECTION_BEGIN,)
    section_ends: tuple[str, ...] = (SECTION_END,)
    fence = True

    def __init__(self, header: re.Pattern[str], *, header_only: bool) -> None:
        self._header = header
        self.header_only = header_only

    def _named(self, header: str, tools: ToolBox) -> str | None:
        m = self._header.fullmatch(header)
        return None if m is None else resolve(m.group("name"), tools)

    def calls(
        self,
        opener: str,
        header: str,
        payload: str | None,
        tools: ToolBox,
        decoded: Any = UNDECODED,
    ) -> list[ToolCall] | None:
        name = self._named(header, tools)
        if name is None:
            return None
        if payload is None:
            return [ToolCall(name=name, arguments="{}")]
        if not is_object(payload, decoded):
            return None
        return [ToolCall(name=name, arguments=payload)]


_V3 = DeepSeekFormat(_V3_HEADER, header_only=False)
_V31 = DeepSeekFormat(_V31_HEADER, header_only=True)


def deepseek_v3(tools: Sequence[ToolSpec]) -> JsonCallParser:
    return JsonCallParser(_V3, tools)


def deepseek_v31(tools: Sequence[ToolSpec]) -> JsonCallParser:
    return JsonCallParser(_V31, tools)


register("deepseek_v3", deepseek_v3)
register("deepseek_v31", deepseek_v31)
