"""JSON-argument calls are reported only once complete and valid; a broken call is text (SPEC P3, P4).

The corpus tables fix what every output merges to under every chunking; these tests pin
*when* a call comes out: in the feed that completes it (its closer, or the end of its JSON
for the formats without one), never earlier, and never at all when its arguments do not
become valid JSON before its closer, in which case every character of it is text.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accord.pipeline.segments import Content, ParsedSegment, ToolCall, merge_segments
from tests.parsers.json_tool_helpers import parser, per_character

PATCH = "*** Begin Patch\n" + '+ a line with "quotes", <tags> and \\ slashes\n' * 1100 + "*** End Patch"
LONG_ARGS = json.dumps({"input": PATCH})
assert len(LONG_ARGS) > 50_000

DS_CB, DS_CE, DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
K_CB, K_CE, K_ARG = "<|tool_call_begin|>", "<|tool_call_end|>", "<|tool_call_argument_begin|>"

#: How each family with a closer writes one call to ``name`` with ``args``, and how long its closer is.
WRITE = {
    "hermes": lambda name, args: f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>',
    "deepseek_v3": lambda name, args: f"{DS_CB}function{DS_SEP}{name}\n```json\n{args}\n```{DS_CE}",
    "deepseek_v31": lambda name, args: f"{DS_CB}{name}{DS_SEP}{args}{DS_CE}",
    "kimi_k2": lambda name, args: f"{K_CB}functions.{name}:0{K_ARG}{args}{K_CE}",
    "harmony": lambda name, args: (
        f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{args}<|call|>"
    ),
}
CLOSER = {
    "hermes": "</tool_call>",
    "deepseek_v3": DS_CE,
    "deepseek_v31": DS_CE,
    "kimi_k2": K_CE,
    "harmony": "<|call|>",
}
#: Formats whose call ends with its JSON.
NO_CLOSER = {
    "mistral": lambda name, args: f"[TOOL_CALLS]{name}[ARGS]{args}",
    "llama3_json": lambda name, args: f'{{"name": "{name}", "parameters": {args}}}',
}
#: Arguments that never become valid JSON, each with text after them that a chunk may end in.
BROKEN = [
    '{"city": "Paris"',
    '{"city": "Paris",}',
    '{"city": Paris}',
    '{"city": "Paris"}}',
    '{"ratio": nan}',
]


def _feed(name: str, chunks: list[str]) -> list[tuple[int, ParsedSegment]]:
    """(index of the chunk whose feed returned it, segment); ``finish`` counts as ``len(chunks)``."""
    p = parser(name)
    out: list[tuple[int, ParsedSegment]] = []
    for i, chunk in enumerate(chunks):
        out += [(i, seg) for seg in p.feed(chunk)]
    out += [(len(chunks), seg) for seg in p.finish()]
    return out


@pytest.mark.parametrize("name", sorted(WRITE))
def test_long_call_comes_whole_in_the_chunk_that_closes_it(name: str) -> None:
    """A 50 KB patch fed 4 characters at a time is one ToolCall, returned by the feed of its closer."""
    text = "Patching now. " + WRITE[name]("apply_patch", LONG_ARGS) + " Done."
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    out = _feed(name, chunks)
    calls = [(i, s) for i, s in out if isinstance(s, ToolCall)]
    closer_end = text.index(CLOSER[name], text.index(LONG_ARGS) + len(LONG_ARGS)) + len(CLOSER[name])
    assert [i for i, _ in calls] == [(closer_end - 1) // 4]
    assert calls[0][1].arguments == LONG_ARGS
    assert merge_segments([s for _, s in out]) == merge_segments(
        parser(name).feed(text) + parser(name).finish()
    )


@pytest.mark.parametrize("name", sorted(NO_CLOSER))
def test_call_without_closer_comes_with_the_end_of_its_json(name: str) -> None:
    text = NO_CLOSER[name]("get_weather", '{"city": "Rome"}')
    out = per_character(name, text)
    assert [(i, type(s)) for i, s in out if isinstance(s, ToolCall)] == [(len(text) - 1, ToolCall)]


@pytest.mark.parametrize(
    ("name", "args"),
    [
        (name, args)
        for name in sorted(WRITE) + sorted(NO_CLOSER)
        for args in BROKEN
        # Without a closer the JSON ends at its brace: an extra brace is text after a call.
        if not (name in NO_CLOSER and args.endswith("}}"))
    ],
)
def test_broken_arguments_are_text_and_nothing_of_them_is_a_call(name: str, args: str) -> None:
    """Per character: no segment is a call, and the text is every character the model wrote."""
    call = (WRITE.get(name) or NO_CLOSER[name])("get_weather", args)
    text = "Checking. " + call + " Done."
    out = [s for _, s in per_character(name, text)]
    assert not any(isinstance(s, ToolCall) for s in out)
    assert "".join(s.text for s in out if isinstance(s, Content)) == text


@pytest.mark.parametrize("name", sorted(WRITE))
def test_broken_call_then_valid_call(name: str) -> None:
    broken = WRITE[name]("get_weather", '{"city": "Paris",}')
    valid = WRITE[name]("get_weather", '{"city": "Rome"}')
    text = broken + " Retrying: " + valid
    want = [Content(text=broken + " Retrying: "), ToolCall(name="get_weather", arguments='{"city": "Rome"}')]
    got = merge_segments([s for _, s in per_character(name, text)])
    if name == "kimi_k2":
        got = [ToolCall(name=s.name, arguments=s.arguments) if isinstance(s, ToolCall) else s for s in got]
    assert got == want


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(WRITE)),
    args=st.sampled_from(BROKEN),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6),
)
def test_broken_call_is_text_at_any_split(name: str, args: str, cuts: list[int]) -> None:
    text = "a " + WRITE[name]("get_weather", args) + " b"
    points = sorted({c % (len(text) + 1) for c in cuts})
    chunks = [text[i:j] for i, j in zip([0, *points], [*points, len(text)], strict=True)]
    out = [s for _, s in _feed(name, chunks)]
    assert merge_segments(out) == [Content(text=text)]
