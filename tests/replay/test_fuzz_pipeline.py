"""The pipeline fuzz holds on a sound chain and finds, and shrinks, a planted reasoning-loss bug.

The planted bug is the one the seed change measured in 55% of production reasoning items: when one
engine chunk holds both the end of the reasoning and the start of the answer, the reasoning half is
dropped. Stream and snapshot then agree with each other (both lack it), so only comparing with what
the parsers found exposes it -- which is what the fuzz's "nothing lost" invariant does.
"""

from __future__ import annotations

import io

import pytest

from accord.events.generation import GenerationOutput
from accord.pipeline.parse import End, ParseStage
from accord.pipeline.segments import Content, ParsedSegment, Reasoning, ToolSpec
from accord.replay.fuzz_pipeline import Case, Family, check_case, corpus_families, run_pipeline_fuzz

WEATHER = ToolSpec(
    name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}}
)
QWEN = Family(
    reasoning="qwen3",
    tools="hermes",
    thinking=None,
    offered=(WEATHER,),
    outputs=(
        "<think>Short.</think>Hi!",
        "<think>The user wants the weather.</think>Let me check."
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
        "No reasoning, just text with a < and a </ in it.",
    ),
    name="qwen3+hermes",
)


def test_the_corpus_gives_a_family_per_parser() -> None:
    families = corpus_families()
    assert {f.tools for f in families} >= {
        "hermes",
        "glm45",
        "glm47",
        "qwen3_coder",
        "deepseek_v32",
        "kimi_k2",
    }
    assert {f.reasoning for f in families} >= {"qwen3", "glm45", "glm47", "deepseek_r1", "harmony"}


@pytest.mark.parametrize("ending", ["stop", "length", "failed", "raised", "disconnect"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_every_ending_holds_the_invariants(ending: str, backend: str) -> None:
    text = QWEN.outputs[1]
    case = Case(QWEN, text, (5, 30, 31, 60, 90), ending, 3)  # type: ignore[arg-type]
    assert check_case(case, backend) is None


def test_a_sound_chain_passes_a_seeded_run() -> None:
    out = io.StringIO()
    assert run_pipeline_fuzz(3, 60, out, families=[QWEN]) == 0, out.getvalue()
    assert "60 examples over 1 families held every invariant" in out.getvalue()


def test_a_planted_reasoning_loss_is_found_and_shrunk(monkeypatch: pytest.MonkeyPatch) -> None:
    feed = ParseStage.feed

    def drops_reasoning_before_text(self: ParseStage, event: GenerationOutput) -> list[ParsedSegment | End]:
        segments = feed(self, event)
        if any(isinstance(s, Content) for s in segments):
            return [s for s in segments if not isinstance(s, Reasoning)]
        return segments

    monkeypatch.setattr(ParseStage, "feed", drops_reasoning_before_text)
    out = io.StringIO()
    assert run_pipeline_fuzz(0, 100, out, families=[QWEN]) == 1
    report = out.getvalue()
    assert "lost between the parsers and the snapshot: reasoning" in report
    # Shrunk: one chunk holds the whole output (no cuts are needed to lose short reasoning).
    assert "chunks ['<think>Short.</think>Hi!']" in report


def test_runs_repeat_by_seed() -> None:
    reports = []
    for _ in range(2):
        out = io.StringIO()
        run_pipeline_fuzz(11, 20, out, families=[QWEN])
        reports.append(out.getvalue())
    assert reports[0] == reports[1]
