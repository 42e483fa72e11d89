"""Llama 3 bare-JSON calls: a leading ``{`` is held only until it is decided (docs/model-formats.md B11)."""

from __future__ import annotations

from accord.pipeline.segments import Content, ToolCall
from tests.parsers.json_tool_helpers import call_indices, per_character

CALLS = '{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_time", "parameters": {}}'


def test_leading_brace_is_held_until_the_call_completes() -> None:
    """Without an opener, streaming a call's first characters as text would leak markup."""
    segments = per_character("llama3_json", CALLS)
    assert not any(isinstance(s, Content) for _, s in segments)
    first_end = CALLS.index("}}") + 1
    assert call_indices("llama3_json", CALLS) == [first_end, len(CALLS) - 1]


def test_json_answer_is_released_as_soon_as_its_first_key_shows_it() -> None:
    """A JSON answer is not held to its end: the first key decides it is not a call."""
    text = '{"answer": "' + "x" * 200 + '"}'
    segments = per_character("llama3_json", text)
    first_text = next(i for i, s in segments if isinstance(s, Content))
    assert first_text == len('{"answer"') - 1
    assert "".join(s.text for _, s in segments if isinstance(s, Content)) == text


def test_calls_after_the_python_tag_and_separators() -> None:
    """``<|python_tag|>`` opens calls after text; ``; `` between calls is markup, not text."""
    segments = [s for _, s in per_character("llama3_json", "Checking. <|python_tag|>" + CALLS)]
    assert segments == [
        Content(text="C"),
        *[Content(text=c) for c in "hecking. "],
        ToolCall(name="get_weather", arguments='{"city": "Paris"}'),
        ToolCall(name="get_time", arguments="{}"),
    ]
