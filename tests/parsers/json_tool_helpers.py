"""Small helpers shared by the JSON-argument tool parser tests."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from accord.pipeline.segments import ParsedSegment, ToolCall, ToolSpec
from accord.pipeline.tools import ToolCallParser, tool_parser
from tests.parsers.json_tool_tables import TOOLS

OFFERED: tuple[ToolSpec, ...] = tuple(msgspec.convert(TOOLS, type=list[ToolSpec]))


def parser(name: str, offered: Sequence[ToolSpec] = OFFERED) -> ToolCallParser:
    return tool_parser(name)(offered)


def per_character(name: str, text: str) -> list[tuple[int, ParsedSegment]]:
    """Feed ``text`` one character at a time: (index of the feed that returned it, segment).

    Segments returned by ``finish`` get the index ``len(text)``.
    """
    p = parser(name)
    out: list[tuple[int, ParsedSegment]] = []
    for i, ch in enumerate(text):
        out += [(i, seg) for seg in p.feed(ch)]
    out += [(len(text), seg) for seg in p.finish()]
    return out


def call_indices(name: str, text: str) -> list[int]:
    """At which character each call was reported, feeding one character at a time."""
    return [i for i, seg in per_character(name, text) if isinstance(seg, ToolCall)]
