"""Kimi K3 calls: any arguments the chat template can write come back as the same JSON.

The writer below renders a call the way K3's template does (the format quoted by vLLM's
``kimi_k3`` parser tests and llama.cpp's ``kimi-k3-text`` chat parser): string values raw with
``type="string"``, every other value as JSON with its type, attribute values escaped (``&`` as
``&amp;``, ``"`` as ``&quot;``), no layout between markers. String values draw from pieces full
of the format's own markup, so quoted markup is exercised on every example.

One spelling cannot round-trip, in K3 or any parser of it: a string that quotes a closer
immediately followed by what structurally comes after it (``<|close|>argument<|sep|>`` then
``<|open|>argument …``) reads exactly as the end of the value. The pieces below always put a
letter after a quoted closer, so every value they make is one the format can carry.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from accord.events.generation import Chunk, Finished
from accord.pipeline.parse import ParseStage
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.segments import Content, ParsedSegment, Reasoning, ToolCall, ToolSpec, merge_segments
from accord.pipeline.tools import tool_parser

OP, CL, SEP = "<|open|>", "<|close|>", "<|sep|>"
TOOLS = (ToolSpec(name="write_file"), ToolSpec(name="get_time"))

_PIECES = st.sampled_from(
    [
        "a",
        "Z",
        " ",
        "\n",
        '"',
        "\\",
        "&",
        "&amp;",
        "{",
        "é",
        "☀",
        f"{CL}argument{SEP}a",
        f"{CL}call{SEP}b",
        f"{CL}tools{SEP}c",
        f"{CL}message{SEP}d",
        f"{CL}response{SEP}e",
        f"{OP}tools{SEP}",
        f'{OP}call tool="get_time" index="2"{SEP}',
        f'{OP}argument key="k" type="string"{SEP}',
        f'{OP}json type="object"{SEP}',
        "<|end_of_msg|>f",
    ]
)
_STRINGS = st.lists(_PIECES, max_size=8).map("".join)
_KEYS = st.from_regex(r'[a-z_&"<][a-z0-9_&"<]{0,6}', fullmatch=True)
_SCALARS = (
    st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.none()
)
_JSON = st.recursive(
    _SCALARS | _STRINGS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;")


def _type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    return "array" if isinstance(value, list) else "object"


def render_call(name: str, index: int, arguments: dict[str, Any]) -> str:
    """One call as K3's template writes it."""
    parts = [f'{OP}call tool="{_attr(name)}" index="{index}"{SEP}']
    for key, value in arguments.items():
        if isinstance(value, str):
            kind, text = "string", value
        else:
            kind, text = _type(value), json.dumps(value, ensure_ascii=False)
        parts.append(f'{OP}argument key="{_attr(key)}" type="{kind}"{SEP}{text}{CL}argument{SEP}')
    parts.append(f"{CL}call{SEP}")
    return "".join(parts)


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c for c in cuts if 0 < c < len(text)})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


def _tools_only(chunks: list[str]) -> list[ParsedSegment]:
    parser = tool_parser("kimi_k3")(TOOLS)
    out: list[ParsedSegment] = []
    for chunk in chunks:
        out += parser.feed(chunk)
    out += parser.finish()
    return merge_segments(out)


def _stage(chunks: list[str], thinking: bool | None) -> list[ParsedSegment]:
    stage = ParseStage(reasoning_parser("kimi_k3")(thinking), tool_parser("kimi_k3")(TOOLS))
    out: list[Any] = []
    for chunk in chunks:
        out += stage.feed(Chunk(text=chunk, token_ids=(0,)))
    out += stage.feed(Finished(reason="stop", prompt_tokens=0))
    return merge_segments([s for s in out if isinstance(s, Content | Reasoning | ToolCall)])


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    st.dictionaries(_KEYS, _JSON, max_size=4),
    st.dictionaries(_KEYS, _STRINGS, max_size=2),
    st.lists(st.integers(1, 600), max_size=6),
)
def test_template_rendered_arguments_round_trip(
    arguments: dict[str, Any], second: dict[str, str], cuts: list[int]
) -> None:
    section = f"{OP}tools{SEP}" + render_call("write_file", 1, arguments) + render_call("get_time", 2, second)
    output = "Writing." + section + f"{CL}tools{SEP}{CL}message{SEP}"
    whole = _tools_only([output])
    assert _tools_only(_chunks(output, cuts)) == whole
    assert whole[0] == Content(text="Writing.")
    calls = whole[1:]
    assert [type(c) for c in calls] == [ToolCall, ToolCall], whole
    assert isinstance(calls[0], ToolCall) and isinstance(calls[1], ToolCall)
    assert json.loads(calls[0].arguments) == arguments
    assert json.loads(calls[1].arguments) == second


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    _STRINGS, _STRINGS, st.dictionaries(_KEYS, _JSON, max_size=3), st.lists(st.integers(1, 600), max_size=6)
)
def test_whole_message_through_the_stage(
    thought: str, answer: str, arguments: dict[str, Any], cuts: list[int]
) -> None:
    """Think channel, response channel, tools channel: reasoning, text and the call, however cut.

    The thought and the answer are drawn from the same pieces; the answer loses the channel
    markers, which are markup in the response channel (the thought may quote them).
    """
    for marker in (
        f"{OP}response{SEP}",
        f"{CL}response{SEP}",
        f"{CL}message{SEP}",
        "<|end_of_msg|>",
        f"{OP}tools{SEP}",
    ):
        answer = answer.replace(marker, "")
    output = (
        f"{thought}{CL}think{SEP}{OP}response{SEP}{answer}{CL}response{SEP}{OP}tools{SEP}"
        + render_call("write_file", 1, arguments)
        + f"{CL}tools{SEP}{CL}message{SEP}"
    )
    whole = _stage([output], True)
    assert _stage(_chunks(output, cuts), True) == whole
    expect: list[ParsedSegment] = []
    if thought:
        expect.append(Reasoning(text=thought))
    if answer:
        expect.append(Content(text=answer))
    expect.append(ToolCall(name="write_file", arguments=json.dumps(arguments, ensure_ascii=False)))
    assert whole[:-1] == expect[:-1]
    last = whole[-1]
    assert isinstance(last, ToolCall) and json.loads(last.arguments) == arguments


def test_thinking_off_answer_loses_only_the_frame() -> None:
    output = f"It is 4.{CL}response{SEP}{CL}message{SEP}"
    assert _stage([output], False) == [Content(text="It is 4.")]
    assert _stage(list(output), False) == [Content(text="It is 4.")]
