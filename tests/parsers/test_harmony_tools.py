"""gpt-oss through the parse stage: harmony splitter, then the harmony tool parser (docs/model-formats.md B10).

The two stages are tested alone by their tables; here they run chained as the parse stage
chains them (phase-less content goes to the tool parser, everything else passes straight
through), which is where a tool parser holding text across a reasoning segment would
reorder the output. Each output is fed whole, one character at a time, at every 2-way split
and at Hypothesis-chosen splits: the merged segments are always the expected ones.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accord.events.generation import Chunk, Finished
from accord.pipeline.parse import End, ParseStage
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.segments import Content, ParsedSegment, Reasoning, ToolCall, merge_segments
from accord.pipeline.tools import tool_parser
from accord.replay.parser_fuzz import cut
from tests.parsers.json_tool_helpers import OFFERED

ANALYSIS = "<|channel|>analysis<|message|>Need the weather.<|end|>"
PREAMBLE = "<|start|>assistant<|channel|>commentary<|message|>Checking.<|end|>"
CALL = (
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city": "Paris"}<|call|>'
)
IN_ROLE = "<|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{}<|call|>"
FINAL = "<|start|>assistant<|channel|>final<|message|>Sunny, 21 C.<|return|>"
WEATHER = ToolCall(name="get_weather", arguments='{"city": "Paris"}')

CASES: list[tuple[str, str, list[ParsedSegment]]] = [
    ("analysis_then_call", ANALYSIS + CALL, [Reasoning(text="Need the weather."), WEATHER]),
    (
        "preamble_call_final",
        ANALYSIS + PREAMBLE + CALL + FINAL,
        [
            Reasoning(text="Need the weather."),
            Content(text="Checking.", phase="commentary"),
            WEATHER,
            Content(text="Sunny, 21 C."),
        ],
    ),
    (
        "recipient_in_role_and_first_message",
        CALL.removeprefix("<|start|>assistant") + ANALYSIS + IN_ROLE,
        [WEATHER, Reasoning(text="Need the weather."), ToolCall(name="get_time", arguments="{}")],
    ),
    (
        "undeclared_recipient_is_text_in_order",
        ANALYSIS + CALL.replace("functions.get_weather", "browser.search") + FINAL,
        [
            Reasoning(text="Need the weather."),
            Content(text=CALL.replace("functions.get_weather", "browser.search") + "Sunny, 21 C."),
        ],
    ),
    (
        "call_cut_by_the_token_budget",
        ANALYSIS + CALL.removesuffix("<|call|>"),
        [Reasoning(text="Need the weather."), WEATHER],
    ),
    (
        "call_without_end_token_before_next_message",
        CALL.removesuffix("<|call|>") + ANALYSIS,
        [
            Content(text=CALL.removesuffix("<|call|>"), phase="commentary"),
            Reasoning(text="Need the weather."),
        ],
    ),
]


def run_stage(chunks: Sequence[str], tools: str = "harmony") -> list[ParsedSegment]:
    stage = ParseStage(reasoning_parser("harmony")(None), tool_parser(tools)(OFFERED))
    out: list[ParsedSegment] = []
    for chunk in chunks:
        out += [s for s in stage.feed(Chunk(text=chunk)) if not isinstance(s, End)]
    out += [s for s in stage.feed(Finished(reason="stop", prompt_tokens=0)) if not isinstance(s, End)]
    return merge_segments(out)


@pytest.mark.parametrize(("name", "output", "expect"), CASES, ids=[c[0] for c in CASES])
def test_stage_gives_the_expected_segments_however_chunked(
    name: str, output: str, expect: list[ParsedSegment]
) -> None:
    """Whole, per character and at every 2-way split: same segments, in the model's order."""
    assert run_stage([output]) == expect
    assert run_stage(list(output)) == expect
    for i in range(1, len(output)):
        assert run_stage([output[:i], output[i:]]) == expect, i


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(st.sampled_from(CASES), st.lists(st.integers(1, 400), unique=True, max_size=10))
def test_stage_at_random_splits(case: tuple[str, str, list[ParsedSegment]], cuts: list[int]) -> None:
    """Hypothesis-chosen cut points never change what the stage reports."""
    _, output, expect = case
    assert run_stage(cut(output, sorted(c for c in cuts if c < len(output)))) == expect


def test_tool_choice_none_keeps_the_call_markup_as_text() -> None:
    """SPEC P9: with the ``none`` tool parser the call message stays text, in place."""
    assert run_stage(list(ANALYSIS + CALL + FINAL), tools="none") == [
        Reasoning(text="Need the weather."),
        Content(text=CALL + "Sunny, 21 C."),
    ]


def test_call_markup_reaches_the_tool_parser_in_one_piece() -> None:
    """The splitter hands a call message over whole, so the tool parser never holds it."""
    splitter = reasoning_parser("harmony")(None)
    pieces = [s for ch in ANALYSIS + CALL for s in splitter.feed(ch)] + splitter.finish()
    assert [s for s in pieces if isinstance(s, Content)] == [Content(text=CALL)]
