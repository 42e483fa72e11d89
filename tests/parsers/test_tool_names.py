"""Name repair against the declared tools (SPEC P6), checked directly."""

from __future__ import annotations

from accord.pipeline.segments import ToolSpec
from accord.pipeline.tools.names import resolve_tool_name

FIRST = ToolSpec(name="write_file", parameters={"type": "object", "properties": {"mode": {"type": "string"}}})
LAST = ToolSpec(name="write_file", parameters={"type": "object", "properties": {"mode": {"type": "integer"}}})
LOOKUP = ToolSpec(name="crm.lookup")


def test_a_repeated_name_resolves_to_its_last_declaration() -> None:
    """A later declaration replaces an earlier one, as a mapping by name would keep it."""
    assert resolve_tool_name("write_file", [FIRST, LOOKUP, LAST]) is LAST
    assert resolve_tool_name("functions.write_file", [FIRST, LOOKUP, LAST]) is LAST


def test_qualifiers_and_fused_markup_resolve_and_prose_does_not() -> None:
    tools = [FIRST, LOOKUP]
    assert resolve_tool_name("lookup", tools) is LOOKUP
    assert resolve_tool_name("<tool_call>write_file", tools) is FIRST
    assert resolve_tool_name("call write_file now", tools) is None
    assert resolve_tool_name("write_file", []) is None
