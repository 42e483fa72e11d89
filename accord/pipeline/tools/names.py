"""Name repair against the declared tools (SPEC P6).

A model may write ``functions.get_weather`` for ``get_weather`` (extra qualifier),
``lookup`` for ``crm.lookup`` (missing qualifier), or fuse markup into the name
(``get_weather</arg_key>``, ``<tool_call>get_weather``). Those resolve to the declared
tool. Prose that merely mentions a tool (``call get_weather now``) never resolves, and
neither does an undeclared name: the caller then releases the call as text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from accord.pipeline.segments import ToolSpec

_MARKUP = re.compile(r"<[^<>]*>|<[^<>]*$|^[^<>]*>|[<>]")
_IDENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-.:/]*")


def _unique(candidates: list[ToolSpec]) -> ToolSpec | None:
    return candidates[0] if len(candidates) == 1 else None


def resolve_tool_name(raw: str, tools: Sequence[ToolSpec]) -> ToolSpec | None:
    """The declared tool ``raw`` names, or ``None`` when it names none (or several). Whitespace
    around ``raw`` is not part of the name."""
    for tool in reversed(tools):  # the last of a repeated name, as the mapping below keeps it
        if tool.name == raw:
            return tool  # the common case, before any mapping is built
    if (stripped := raw.strip()) != raw:
        return resolve_tool_name(stripped, tools)
    if not tools:
        return None
    by_name = {t.name: t for t in tools}
    name = _MARKUP.sub(" ", raw).strip().strip("\"'`")
    if not name or not _IDENT.fullmatch(name):
        return None
    if name in by_name:
        return by_name[name]
    # Extra qualifier: "functions.get_weather", "default_api:get_weather", "crm.lookup" when
    # only "lookup" is declared. Try each suffix after a separator, longest first.
    parts = re.split(r"[.:/]", name)
    for i in range(1, len(parts)):
        tail = ".".join(parts[i:])
        if tail in by_name:
            return by_name[tail]
    # Missing qualifier: "lookup" for the namespaced "crm.lookup".
    bare = parts[-1]
    return _unique([t for t in tools if t.bare_name == bare or t.name.rsplit(".", 1)[-1] == bare])
