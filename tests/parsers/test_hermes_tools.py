"""Hermes/Qwen ``<tool_call>`` JSON calls: done the moment they complete (SPEC P4).

The table (``accord/replay/corpus/tools/hermes.json``) fixes what every output parses to and
``test_corpus_chunking`` checks it under every chunking; these tests pin *when* segments
come out while the text streams in.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from accord.pipeline.segments import Content, ParsedSegment, ToolCall, merge_segments
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


_NAMES = st.sampled_from(["get_weather", "get_time", "functions.get_time", "launch_rocket", 'say "hi"'])
#: What each name resolves to among the offered tools (SPEC P6).
_RESOLVED = {"get_weather": "get_weather", "get_time": "get_time", "functions.get_time": "get_time"}
_ARGS = st.one_of(
    st.dictionaries(st.sampled_from(["city", "days", "note"]), st.one_of(st.text(max_size=8), st.integers())),
    st.none(),
    st.just("{}"),
    st.just([1]),
)


@st.composite
def _call(draw: st.DrawFn) -> tuple[str, ParsedSegment]:
    """A wrapper in one of the layouts models write, or a near miss of the usual one, and what it is.

    The expectation is worked out here: the first ``name`` and the first ``arguments`` member
    count, an object is kept as written, a missing or null one is ``{}``.
    """
    members = [("name", draw(_NAMES)), ("arguments", draw(_ARGS))]
    if draw(st.booleans()):
        members.reverse()
    extra = draw(st.sampled_from([None, "arguments", "name", "id"]))
    if extra is not None:
        members.append((extra, draw(_ARGS) if extra != "name" else draw(_NAMES)))
    item_sep, key_sep = draw(st.sampled_from([(", ", ": "), (",", ":"), (" ,", " : "), (",\n", ":")]))
    ascii_only = draw(st.booleans())
    written = [
        (k, json.dumps(v, ensure_ascii=ascii_only, separators=(item_sep, key_sep))) for k, v in members
    ]
    body = item_sep.join(json.dumps(k) + key_sep + v for k, v in written)
    head, blank, tail = (
        draw(st.sampled_from(choices)) for choices in (["", "\n"], ["", " ", "\n"], ["", "\n"])
    )
    markup = f"<tool_call>{head}{{{body}{blank}}}{tail}</tool_call>"
    # A repeated key: the first one counts.
    first, first_written = dict(reversed(members)), dict(reversed(written))
    name = _RESOLVED.get(first["name"])
    value = first["arguments"]
    arguments = {type(None): "{}", str: value, dict: first_written["arguments"]}.get(type(value))
    if name is None or arguments is None:
        return markup, Content(text=markup)
    return markup, ToolCall(name=name, arguments=arguments)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.one_of(
            _call(),
            st.sampled_from(["Sure. ", "\n", "a < b ", "<tool_call>", "</tool_call>"]).map(
                lambda t: (t, Content(text=t))
            ),
        ),
        max_size=6,
    ),
    cut=st.integers(min_value=0, max_value=40),
)
def test_whole_text_reads_calls_as_written_and_as_the_stream_does(
    parts: list[tuple[str, ParsedSegment]], cut: int
) -> None:
    """A call read in one step from a big chunk is the call written, and what the per-character scan makes of it."""
    text = "".join(markup for markup, _ in parts)
    whole = parser("hermes")
    at_once = merge_segments(whole.feed(text) + whole.finish())
    assert at_once == merge_segments([segment for _, segment in parts])
    assert merge_segments([s for _, s in per_character("hermes", text)]) == at_once
    two = parser("hermes")
    k = min(cut, len(text))
    assert merge_segments(two.feed(text[:k]) + two.feed(text[k:]) + two.finish()) == at_once
