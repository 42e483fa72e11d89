"""DeepSeek V3 and V3.1 calls: each reported at its own end marker (docs/model-formats.md B4, B5)."""

from __future__ import annotations

import pytest

from accord.pipeline.segments import ToolCall
from tests.parsers.json_tool_helpers import call_indices, parser

SB, SE = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CB, CE, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"

ONE = {
    "deepseek_v3": lambda name, args: f"{CB}function{SEP}{name}\n```json\n{args}\n```{CE}",
    "deepseek_v31": lambda name, args: f"{CB}{name}{SEP}{args}{CE}",
}


@pytest.mark.parametrize("name", sorted(ONE))
def test_each_call_is_reported_at_its_end_marker_not_the_section_end(name: str) -> None:
    """A client sees each call as it completes, before the section is closed."""
    first = ONE[name]("get_weather", '{"city": "Tokyo"}')
    second = ONE[name]("get_time", "{}")
    text = SB + first + second + SE
    assert call_indices(name, text) == [len(SB + first) - 1, len(SB + first + second) - 1]


@pytest.mark.parametrize("name", sorted(ONE))
def test_begin_and_end_in_one_delta_is_not_dropped(name: str) -> None:
    """vllm #48020: a whole call in one delta was silently dropped."""
    p = parser(name)
    out = p.feed("Let me check.") + p.feed(SB + ONE[name]("get_time", "{}") + SE) + p.finish()
    assert [s for s in out if isinstance(s, ToolCall)] == [ToolCall(name="get_time", arguments="{}")]
