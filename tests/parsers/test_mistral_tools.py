"""Mistral calls end with their JSON: no closer to wait for (docs/model-formats.md B12)."""

from __future__ import annotations

from accord.pipeline.segments import ToolCall
from tests.parsers.json_tool_helpers import call_indices, parser


def test_v11_call_is_reported_at_its_closing_brace() -> None:
    """Nothing follows a v11 call, so the brace that closes the JSON completes it."""
    text = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}'
    first = text.index("}")
    assert call_indices("mistral", text) == [first, len(text) - 1]


def test_pre_v11_list_is_reported_when_the_list_closes() -> None:
    """The pre-v11 list is one block: its calls come out together at ``]``."""
    text = '[TOOL_CALLS][{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Rome"}}] ok'
    closed = text.index("] ok")
    assert call_indices("mistral", text) == [closed, closed]


def test_call_id_from_the_model_is_kept() -> None:
    """Mistral expects the id it wrote back on the tool result."""
    p = parser("mistral")
    out = p.feed("[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{}") + p.finish()
    assert out == [ToolCall(name="get_time", arguments="{}", call_id="a1b2c3d4e")]
