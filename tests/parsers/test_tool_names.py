"""Name repair against the declared tools (SPEC P6), checked directly."""

from __future__ import annotations

from accord.pipeline.segments import ToolCall, ToolSpec, merge_segments
from accord.pipeline.tools import tool_parser
from accord.pipeline.tools.names import resolve_tool_name
from accord.pipeline.tools.toolbox import ToolBox

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


def test_a_declared_name_resolves_in_every_family_whatever_its_length() -> None:
    """A declared name is resolved as it stands before any limit on what the repair rules read: a
    600-character name (the request does not cap it) gives a call in a JSON family and a markup one."""
    long = ToolSpec(name="n" * 600, parameters={"type": "object", "properties": {"x": {"type": "integer"}}})
    box = ToolBox([FIRST, long])
    assert box.resolve(long.name) is long
    assert box.resolve("functions." + long.name) is None  # past the limit and undeclared: not scanned
    hermes = tool_parser("hermes")([long])
    out = hermes.feed('<tool_call>\n{"name": "' + long.name + '", "arguments": {"x": 1}}\n</tool_call>')
    assert merge_segments([*out, *hermes.finish()]) == [ToolCall(name=long.name, arguments='{"x": 1}')]
    glm = tool_parser("glm47")([long])
    out = glm.feed(f"<tool_call>{long.name}<arg_key>x</arg_key><arg_value>1</arg_value></tool_call>")
    assert merge_segments([*out, *glm.finish()]) == [ToolCall(name=long.name, arguments='{"x": 1}')]
