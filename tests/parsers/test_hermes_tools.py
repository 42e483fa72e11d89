"""Hermes/Qwen ``<tool_call>`` JSON calls: done the moment they complete (SPEC P4).

The table (``accord/replay/corpus/tools/hermes.json``) fixes what every output parses to and
``test_corpus_chunking`` checks it under every chunking; these tests pin *when* segments
come out while the text streams in.
"""

from __future__ import annotations

from accord.pipeline.segments import Content, ToolCall, merge_segments
from tests.parsers.json_tool_helpers import call_indices, parser, per_character

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def test_call_is_reported_by_the_chunk_that_completes_it() -> None:
    """A client sees the call as soon as its closer arrives, not at the end of the response."""
    text = "Sure. " + CALL + " More text."
    assert call_indices("hermes", text) == [len("Sure. " + CALL) - 1]


def test_no_markup_leaks_as_text_while_a_call_streams() -> None:
    """Every character of the call is held until the call is decided (vllm #29725)."""
    text = "Sure. " + CALL
    emitted = "".join(s.text for _, s in per_character("hermes", text) if isinstance(s, Content))
    assert emitted == "Sure. "


def test_several_calls_in_one_chunk_come_out_in_order() -> None:
    """MTP and stream_interval > 1 bundle calls; none may be dropped or merged (B14 item 3)."""
    second = CALL.replace("Paris", "Rome")
    p = parser("hermes")
    out = p.feed("x" + CALL + second) + p.finish()
    assert [s.arguments for s in out if isinstance(s, ToolCall)] == ['{"city": "Paris"}', '{"city": "Rome"}']


def test_zero_argument_call_has_empty_object_arguments() -> None:
    """Parameterless tools must still get ``"{}"`` (vllm #28806)."""
    p = parser("hermes")
    out = p.feed('<tool_call>{"name": "get_time"}</tool_call>') + p.finish()
    assert out == [ToolCall(name="get_time", arguments="{}")]


def test_call_cut_inside_its_arguments_is_text() -> None:
    """Output cut by the token budget inside the arguments is never a call (SPEC P4): it is text."""
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Pa'
    segments = [s for _, s in per_character("hermes", text)]
    assert merge_segments(segments) == [Content(text=text)]


def test_call_cut_before_its_arguments_is_released_as_text_verbatim() -> None:
    """Before a call has streamed anything, markup that never becomes a call is text (SPEC P7)."""
    text = '<tool_call>{"name": "get_weather", "argu'
    segments = [s for _, s in per_character("hermes", text)]
    assert "".join(s.text for s in segments if isinstance(s, Content)) == text
