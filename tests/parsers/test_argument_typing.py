"""Argument typing by the tool's JSON schema (SPEC P5), independent of any markup.

The GLM, Qwen3-Coder and DSML parsers all hand raw value text to one typer, so its rules
are pinned here once: what a declared string, a declared other type, an undeclared key and
a not-quite-JSON value each become.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from accord.pipeline.segments import ToolSpec
from accord.pipeline.tools._schema import arguments_json, schema_types

SCHEMA: dict[str, Any] = {
    "type": "object",
    "$defs": {"Count": {"type": "integer"}, "Point": {"$ref": "#/definitions/P"}},
    "definitions": {"P": {"type": "object", "properties": {"x": {"type": "number"}}}},
    "properties": {
        "s": {"type": "string"},
        "i": {"$ref": "#/$defs/Count"},
        "n": {"type": "number"},
        "b": {"type": "boolean"},
        "a": {"type": "array", "items": {"type": "integer"}},
        "o": {"$ref": "#/$defs/Point"},
        "e": {"enum": ["on", "off"]},
        "en": {"enum": [1, 2, None]},
        "sn": {"type": ["string", "null"]},
        "u": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "one": {"oneOf": [{"type": "object"}, {"type": "array"}]},
        "all": {"allOf": [{"type": ["integer", "string"]}, {"type": "integer"}]},
        "c": {"const": 3},
        "any": {"description": "no type at all"},
        "items_only": {"items": {"type": "string"}},
    },
}
TOOL = ToolSpec(name="t", parameters=SCHEMA)


@pytest.mark.parametrize(
    ("key", "raw", "value"),
    [
        ("s", "007", "007"),
        ("s", "true", "true"),
        ("s", "[1]", "[1]"),
        ("s", "null", "null"),
        ("s", ' padded "quote" ', ' padded "quote" '),
        ("i", "5", 5),
        ("i", "2024-06-27", "2024-06-27"),
        ("i", "1e309", "1e309"),
        ("n", "0.5", 0.5),
        ("n", "NaN", "NaN"),
        ("n", "-Infinity", "-Infinity"),
        ("b", "true", True),
        ("b", "True", True),
        ("b", "yes", "yes"),
        ("a", "[1, 2]", [1, 2]),
        ("a", "(1, 2)", [1, 2]),
        ("a", "{1, 2}", "{1, 2}"),
        ("o", '{"x": 1.5}', {"x": 1.5}),
        ("o", "{'x': None}", {"x": None}),
        ("o", '{\\"x\\": 2}', {"x": 2}),
        ("o", "{1: 2}", "{1: 2}"),
        ("e", "on", "on"),
        ("en", "2", 2),
        ("en", "null", None),
        ("sn", "null", None),
        ("sn", "12", "12"),
        ("u", "12", 12),
        ("u", "12a", "12a"),
        ("u", "1.5", "1.5"),
        ("one", "[3]", [3]),
        ("one", "{}", {}),
        ("all", "4", 4),
        ("c", "3", 3),
        ("any", "123", 123),
        ("any", "True", "True"),
        ("items_only", "['x']", ["x"]),
        ("undeclared", "123", 123),
        ("undeclared", '"quoted"', "quoted"),
        ("undeclared", "{'a': 1}", "{'a': 1}"),
        ("undeclared", "NaN", "NaN"),
        ("undeclared", "plain words", "plain words"),
    ],
)
def test_value_is_typed_by_its_schema(key: str, raw: str, value: object) -> None:
    """Declared strings stay verbatim; other types decode; undeclared keys only as strict JSON."""
    assert json.loads(arguments_json([(key, raw)], TOOL)) == {key: value}


def test_a_repeated_key_keeps_its_first_value() -> None:
    """The model's first word on a key stands (SPEC P5)."""
    assert arguments_json([("s", "a"), ("s", "b"), ("i", "1"), ("i", "2")], TOOL) == '{"s": "a", "i": 1}'


def test_zero_arguments_give_an_empty_object() -> None:
    """A call without arguments still carries "{}", never nothing (docs/model-formats.md B14 #4)."""
    assert arguments_json([], TOOL) == "{}"
    assert arguments_json([], ToolSpec(name="bare")) == "{}"


def test_output_is_readable_unicode_json() -> None:
    """Arguments keep non-ASCII text as written, with the spacing the JSON-family formats use."""
    assert arguments_json([("s", "北京"), ("i", "3")], TOOL) == '{"s": "北京", "i": 3}'


def test_marked_strings_win_only_where_the_schema_allows_a_string() -> None:
    """DSML's string="true" keeps text for undeclared keys, but cannot override a declared integer."""
    pairs = [("undeclared", "5"), ("i", "5"), ("u", "5")]
    marked = {"undeclared", "i", "u"}
    assert json.loads(arguments_json(pairs, TOOL, marked)) == {"undeclared": "5", "i": 5, "u": "5"}


def test_custom_tool_input_is_a_string_even_without_a_schema() -> None:
    """Custom tools are offered with one string parameter, input (SPEC P10)."""
    tool = ToolSpec(name="apply_patch", kind="custom")
    assert arguments_json([("input", "123")], tool) == '{"input": "123"}'


@pytest.mark.parametrize(
    ("schema", "types"),
    [
        ({"$ref": "#/$defs/Missing"}, None),
        ({"$ref": "https://example.com/remote.json"}, None),
        ({"anyOf": [{"type": "string"}, {}]}, None),
        ({"allOf": [{"type": "string"}, {"type": "integer"}]}, None),
        ({"type": ["integer", "null"]}, frozenset({"integer", "null"})),
        ({"enum": ["a", 1]}, frozenset({"string", "integer"})),
        ({"properties": {}}, frozenset({"object"})),
    ],
)
def test_schema_types_resolve_or_give_up(schema: dict[str, Any], types: frozenset[str] | None) -> None:
    """Unreadable or contradictory schemas admit anything rather than guessing a type."""
    assert schema_types(schema, {"$defs": {}}) == types


def test_cyclic_refs_do_not_recurse_forever() -> None:
    """A schema whose $ref points at itself is read as untyped, not as a crash."""
    root = {"$defs": {"A": {"$ref": "#/$defs/A"}}, "properties": {"x": {"$ref": "#/$defs/A"}}}
    assert json.loads(arguments_json([("x", "1")], ToolSpec(name="t", parameters=root))) == {"x": 1}


def _diamond_schema(levels: int) -> dict[str, Any]:
    """Each level names the next three times through ``allOf``/``anyOf``: 3**levels paths, ``levels`` nodes."""
    defs: dict[str, Any] = {f"n{levels}": {"type": "integer"}}
    for i in range(levels):
        nxt = {"$ref": f"#/$defs/n{i + 1}"}
        defs[f"n{i}"] = {"allOf": [nxt, {"anyOf": [nxt, dict(nxt)]}]}
    return {"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/n0"}}}


ADVERSARIAL = _diamond_schema(14)

_CALLS = {
    "qwen3_coder": "<tool_call>\n<function=t>\n<parameter=x>\n5\n</parameter>\n</function>\n</tool_call>",
    "glm47": "<tool_call>t<arg_key>x</arg_key><arg_value>5</arg_value></tool_call>",
    "deepseek_v32": (
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="t">\n'
        '<｜DSML｜parameter name="x" string="false">5</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>"
    ),
}


@pytest.mark.parametrize("parser", sorted(_CALLS))
def test_adversarial_schema_is_typed_in_linear_time(parser: str) -> None:
    """A 1.4 KB schema of ref diamonds (breadth, not depth) was millions of paths; typing is per node now."""
    import time

    from accord.pipeline.segments import ToolCall
    from accord.pipeline.tools import tool_parser

    assert 1200 <= len(json.dumps(ADVERSARIAL)) <= 1600
    started = time.process_time()
    parse = tool_parser(parser)([ToolSpec(name="t", parameters=ADVERSARIAL)])
    segments = parse.feed(_CALLS[parser]) + parse.finish()
    elapsed = time.process_time() - started
    calls = [s for s in segments if isinstance(s, ToolCall)]
    assert [json.loads(c.arguments) for c in calls] == [{"x": 5}]
    assert elapsed < 0.05, f"{parser}: {elapsed * 1000:.1f} ms"


def test_diamond_refs_keep_their_types() -> None:
    """Memoised typing gives what the tree walk gave: the intersection of the same types."""
    assert schema_types(ADVERSARIAL["properties"]["x"], ADVERSARIAL) == frozenset({"integer"})
