"""``run_parser_fuzz``: the chunking property as a command, over packaged or given corpora (SPEC R4)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from accord.pipeline import tools
from accord.pipeline.segments import Content, ParsedSegment, ToolSpec
from accord.replay.parser_fuzz import run_parser_fuzz


class _LosesHeldText:
    """A parser with the classic bug: a lone "<" ending a chunk is dropped (sglang PR #8606)."""

    def __init__(self, offered: Sequence[ToolSpec] = ()) -> None:
        del offered

    def feed(self, text: str) -> list[ParsedSegment]:
        return [Content(text=text[:-1] if text.endswith("<") else text)]

    def finish(self) -> list[ParsedSegment]:
        return []


def test_packaged_corpus_holds_for_one_parser() -> None:
    """The packaged table of a parser passes, and the summary says how many rows held."""
    out = io.StringIO()
    assert run_parser_fuzz("glm47", seed=1, examples=10, corpus_dir=None, out=out) == 0
    assert "rows hold" in out.getvalue()


def test_a_broken_parser_is_reported_with_its_minimal_chunking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shrinking ends at one cut right after the "<": the smallest chunking that shows the bug."""
    monkeypatch.setitem(tools._REGISTRY, "loses_held_text", _LosesHeldText)
    table = {
        "stage": "tools",
        "parser": "loses_held_text",
        "rows": [
            {
                "name": "lt",
                "output": "a<b and more text",
                "expect": [{"kind": "content", "text": "a<b and more text"}],
            }
        ],
    }
    (tmp_path / "broken.json").write_text(json.dumps(table), encoding="utf-8")
    out = io.StringIO()
    assert run_parser_fuzz("loses_held_text", seed=3, examples=200, corpus_dir=tmp_path, out=out) == 1
    assert "minimal failing chunking ['a<', 'b and more text']" in out.getvalue()


def test_a_wrong_expectation_fails_the_whole_parse(tmp_path: Path) -> None:
    """A table row that disagrees with the parser fails before any chunking is tried."""
    table = {
        "stage": "reasoning",
        "parser": "qwen3",
        "rows": [
            {
                "name": "r",
                "output": "a</think>b",
                "expect": [{"kind": "reasoning", "text": "a"}, {"kind": "content", "text": "b"}],
            }
        ],
    }
    (tmp_path / "qwen3.json").write_text(json.dumps(table), encoding="utf-8")
    out = io.StringIO()
    assert run_parser_fuzz("qwen3", seed=0, examples=5, corpus_dir=tmp_path, out=out) == 1
    assert "FAIL reasoning/qwen3/r: whole parse" in out.getvalue()


def test_raw_outputs_are_checked_stream_against_whole(tmp_path: Path) -> None:
    """A directory of raw outputs and its tools.json is enough: no expectation is needed."""
    (tmp_path / "one.txt").write_text(
        "Hi<tool_call>get_time</tool_call> and <tool_call>get_time<arg_key>", encoding="utf-8"
    )
    (tmp_path / "tools.json").write_text(json.dumps([{"name": "get_time"}]), encoding="utf-8")
    out = io.StringIO()
    assert run_parser_fuzz("glm47", seed=0, examples=30, corpus_dir=tmp_path, out=out) == 0
    # glm47 names a reasoning splitter and a tool parser: the output runs through both.
    assert "2/2 rows hold" in out.getvalue()


def test_an_unknown_parser_has_no_rows() -> None:
    out = io.StringIO()
    assert run_parser_fuzz("no_such_parser", seed=0, examples=5, corpus_dir=None, out=out) == 1


def test_parsers_load_without_event_loop_server_or_torch() -> None:
    """Every registered parser can be built and run with no anyio, hypercorn or torch loaded."""
    code = (
        "import sys\n"
        "from accord.pipeline import reasoning, tools\n"
        "from accord.pipeline.segments import ToolSpec\n"
        "for n in reasoning.reasoning_parser_names():\n"
        "    p = reasoning.reasoning_parser(n)(None); p.feed('<think>a</think>b'); p.finish()\n"
        "for n in tools.tool_parser_names():\n"
        "    p = tools.tool_parser(n)([ToolSpec(name='f')]); p.feed('<tool_call>f</tool_call>'); p.finish()\n"
        "print(','.join(m for m in ('anyio', 'hypercorn', 'torch', 'trio') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
