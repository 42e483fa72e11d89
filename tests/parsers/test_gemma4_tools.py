"""Gemma 4 calls: any argument value the chat template can write comes back as the same JSON.

The writer below renders values the way Google's template does (its ``format_argument``
macro: ``<|"|>`` around strings, bare keys, ``true``/``false``, numbers as Python prints
them, ``None`` for null); the parser must return JSON equal to the value, whole and however
the output is chunked. Strings draw from an alphabet full of the format's own markup and of
JSON's special characters, so quoted markup and escaping are exercised on every example.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from accord.pipeline.segments import Content, ToolCall, ToolSpec, merge_segments
from accord.pipeline.tools import tool_parser

Q = '<|"|>'
TOOLS = (ToolSpec(name="write_file"), ToolSpec(name="get_time"))

_PIECES = st.sampled_from(
    [
        "a",
        "Z",
        " ",
        "\n",
        "\t",
        '"',
        "\\",
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "é",
        "☀",
        "<tool_call|>",
        "<|tool_call>",
        "call:x{",
    ]
)
_STRINGS = st.lists(_PIECES, max_size=8).map("".join)
_KEYS = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
_SCALARS = (
    _STRINGS
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.none()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)


def render(value: Any) -> str:
    """A value as the Gemma 4 template writes a call's arguments (keys unquoted)."""
    if isinstance(value, str):
        return Q + value + Q
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "None"  # Jinja prints Python's None
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(render(v) for v in value) + "]"
    return repr(value)


def _parse(chunks: list[str]) -> list[Any]:
    parser = tool_parser("gemma4")(TOOLS)
    out = []
    for chunk in chunks:
        out += parser.feed(chunk)
    out += parser.finish()
    return merge_segments(out)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.dictionaries(_KEYS, _VALUES, max_size=5), st.lists(st.integers(1, 400), max_size=6))
def test_template_rendered_arguments_round_trip(arguments: dict[str, Any], cuts: list[int]) -> None:
    output = "Writing.<|tool_call>call:write_file" + render(arguments) + "<tool_call|>"
    points = sorted({c for c in cuts if c < len(output)})
    chunks = [output[a:b] for a, b in zip([0, *points], [*points, len(output)], strict=True)]
    whole = _parse([output])
    assert _parse(chunks) == whole
    assert whole[0] == Content(text="Writing.")
    assert len(whole) == 2 and isinstance(whole[1], ToolCall)
    assert json.loads(whole[1].arguments) == arguments


def test_arguments_are_valid_json_with_escapes() -> None:
    output = f'<|tool_call>call:write_file{{content:{Q}a "b" \\ c\n{Q},n:-2.5e-3}}<tool_call|>'
    (call,) = _parse([output])
    assert isinstance(call, ToolCall)
    assert json.loads(call.arguments) == {"content": 'a "b" \\ c\n', "n": -2.5e-3}


def test_cut_off_call_is_text_even_when_its_body_is_complete() -> None:
    output = "<|tool_call>call:get_time{}"
    assert _parse([output]) == [Content(text=output)]
