"""ParseStage's token accounting (SPEC W12) on its fast paths equals the rule it implements.

The stage routes most deltas through shortcuts (a splitter that passes text on unread, a
response whose reasoning can no longer grow). This test states the rule once, over a fresh
splitter and parser routed the general way, and checks that the stage's segments and counts
are the same for any output and any chunking, with one to three tokens a chunk.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from accord.events.generation import Chunk, Finished
from accord.pipeline.parse import End, ParseStage
from accord.pipeline.reasoning import ReasoningSplitter, reasoning_parser
from accord.pipeline.segments import Content, ParsedSegment, Reasoning, ToolSpec, merge_segments
from accord.pipeline.tools import ToolCallParser, tool_parser

TOOLS = (
    ToolSpec(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}}),
)

_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
_MARKUP = ["<think>", "</think>", "why so", " ", "\n", "answer", "<tool_", "call>", "</tool_call>", "<", "{}"]
#: The markup, and a call whole and cut in two (a call left open when the output ends).
pieces = st.sampled_from([*_MARKUP, _CALL, _CALL[:40], _CALL[40:]])


#: (reasoning splitter, tool parser): reasoning then calls; calls alone (the splitter is verbatim from
#: the start); GLM's markup, whose splitter starts inside reasoning.
FAMILIES = ["qwen3/hermes", "none/hermes", "glm47/glm47"]


def _parts(family: str) -> tuple[ReasoningSplitter, ToolCallParser]:
    reasoning, tools = family.split("/")
    return reasoning_parser(reasoning)(None), tool_parser(tools)(TOOLS)


def reference(family: str, chunks: list[tuple[str, int]]) -> tuple[list[ParsedSegment], int, int]:
    """Segments, output tokens and reasoning tokens by the rule in ``accord.pipeline.parse``'s docstring:
    a chunk's tokens are reasoning when most of what it released was reasoning; a chunk that released
    nothing passes its tokens to the next that does, and at the end to the last one."""
    splitter, tools = _parts(family)
    out: list[ParsedSegment] = []
    pending = reasoning_tokens = output_tokens = 0
    last_was_reasoning = False
    for text, tokens in chunks:
        output_tokens += tokens
        released: list[ParsedSegment] = []
        for seg in splitter.feed(text):
            if type(seg) is Content and seg.phase is None:
                released.extend(tools.feed(seg.text))
            else:
                released.append(seg)
        out.extend(released)
        reasoning = sum(len(s.text) for s in released if type(s) is Reasoning)
        other = sum(len(s.text) if type(s) is Content else 1 for s in released if type(s) is not Reasoning)
        if not (reasoning or other):
            pending += tokens
            continue
        last_was_reasoning = reasoning >= other
        if last_was_reasoning:
            reasoning_tokens += tokens + pending
        pending = 0
    for seg in splitter.finish():
        out.extend(tools.feed(seg.text) if type(seg) is Content and seg.phase is None else [seg])
    out.extend(tools.finish())
    if last_was_reasoning:
        reasoning_tokens += pending
    return out, output_tokens, min(reasoning_tokens, output_tokens)


@st.composite
def chunked(draw: st.DrawFn) -> list[tuple[str, int]]:
    text = "".join(draw(st.lists(pieces, max_size=14)))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=12))))
    bounds = [0, *cuts, len(text)]
    return [(text[a:b], draw(st.integers(1, 3))) for a, b in itertools.pairwise(bounds) if b > a]


@settings(max_examples=400, deadline=None)
@given(family=st.sampled_from(FAMILIES), chunks=chunked())
def test_stage_counts_as_the_rule_says(family: str, chunks: list[tuple[str, int]]) -> None:
    splitter, tools = _parts(family)
    stage = ParseStage(splitter, tools)
    got: list[ParsedSegment | End] = []
    for text, tokens in chunks:
        got.extend(stage.feed(Chunk(text=text, token_ids=tuple(range(tokens)))))
    got.extend(stage.feed(Finished(reason="stop", prompt_tokens=0)))
    end = got[-1]
    assert isinstance(end, End)
    want, output_tokens, reasoning_tokens = reference(family, chunks)
    assert merge_segments([s for s in got[:-1] if not isinstance(s, End)]) == merge_segments(want)
    assert (end.output_tokens, end.reasoning_tokens) == (output_tokens, reasoning_tokens)


def test_a_call_left_open_after_reasoning_counts_with_the_reasoning() -> None:
    """The case the settled shortcut must not take: the chunk that closes reasoning opens a call (the
    splitter passes the rest on unread from there), the next chunks release nothing, and the output
    ends. Their tokens go with the reasoning before them."""
    splitter, tools = _parts("qwen3/hermes")
    stage = ParseStage(splitter, tools)
    assert stage.feed(Chunk(text="<think>why</think><tool_call>", token_ids=(1, 2))) == [
        Reasoning(text="why")
    ]
    assert stage.feed(Chunk(text='{"na', token_ids=(3,))) == []
    end = stage.feed(Finished(reason="stop", prompt_tokens=0))[-1]
    assert isinstance(end, End)
    assert (end.output_tokens, end.reasoning_tokens) == (3, 3)
