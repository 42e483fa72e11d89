"""The parse stage as the server runs it: reasoning splitter + tool parser + token accounting.

The parser-only benchmark (``test_parser_bench.py``) times each parser alone; this one times
``ParseStage``, which is what a request's chain runs per engine delta, on GLM-4.7 and
Hermes/Qwen3 outputs of 100 KB, 300 KB and 1 MB built here (reasoning, then text and calls),
fed as 4-character deltas (one token each) and whole. Every run is checked against the
ground truth the output was built from: the reasoning text, the answer text and every call.

Printed: MB/s and microseconds per delta streamed, MB/s whole. Targets (issue 12: >= 3 MB/s
streamed, about 1.3 us per delta) are reported, not asserted, since machines differ.
The stage runs as this install built it (compiled by mypyc where a compiler was present); one test
sets it beside the same source interpreted (``python -m tests.interpreted``), taking turns in one run.
Asserted, because it holds on any machine: 1 MB costs at most 11x 100 KB. Times are this
process's CPU time, so other work on a shared machine does not count as parser cost.

The peer comparison (issue: whole-text parsing at least 2x the fastest peer) runs the same outputs
through the parsers of SGLang and vLLM, in ``peer_parsers.py`` under the Python that
``ACCORD_PARSER_PEERS`` names (``bash .ci/parser-peers.sh`` builds it and prints it), and prints
each one's MB/s and whether its result is the ground truth; the 2x target is reported, not asserted.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import accord.pipeline.parse
from accord.events.generation import Chunk, Finished
from accord.pipeline.parse import End, ParseStage
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.segments import Content, ParsedSegment, Reasoning, ToolCall, ToolSpec, merge_segments
from accord.pipeline.tools import tool_parser
from tests.interpreted import is_compiled

KB = 1000
SIZES = (100 * KB, 300 * KB, 1000 * KB)
DELTA = 4
STREAM_TARGET = 3.0
#: The issue's target for the 1 MB / 100 KB cost ratio, printed; the assertion allows for noise (on a
#: quiet 2-core machine one run measured 9.1 and the next 14.3 for the same code), and still fails a
#: stage that rescans what it consumed (quadratic: about 100).
LINEAR_TARGET = 11.0
LINEAR_LIMIT = 20.0
#: Rounds of the throughput test; in each, every size is streamed once and parsed whole a few times.
ROUNDS = 5
ROOT = Path(__file__).resolve().parents[2]

TOOLS = (
    ToolSpec(
        name="write_file",
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"},
                "mode": {"type": "integer"},
            },
        },
    ),
    ToolSpec(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}}),
)


class Truth(NamedTuple):
    output: str
    reasoning: str
    content: str
    calls: list[tuple[str, dict[str, object]]]


def _unit_calls(n: int) -> list[tuple[str, dict[str, object]]]:
    body = f"def f{n}(x):\n    return x * {n}  # a < b and {{braces}}\n" * 3
    return [
        ("write_file", {"path": f"src/m{n}.py", "content": body, "mode": 420}),
        ("get_weather", {"city": "Paris"}),
    ]


def _glm_call(name: str, args: dict[str, object]) -> str:
    pairs = "".join(
        f"<arg_key>{k}</arg_key><arg_value>{v if isinstance(v, str) else json.dumps(v)}</arg_value>"
        for k, v in args.items()
    )
    return f"<tool_call>{name}{pairs}</tool_call>"


def _hermes_call(name: str, args: dict[str, object]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


def build(family: str, size: int) -> Truth:
    """An output of about ``size`` characters: reasoning, then text and calls repeated."""
    reasoning = "The user wants files written; check the weather too. " * 40
    prefix = reasoning + "</think>" if family == "glm47" else "<think>" + reasoning + "</think>"
    write = _glm_call if family == "glm47" else _hermes_call
    parts, content, calls = [prefix], [], []
    n = 0
    length = len(prefix)
    while length < size:
        text = f"\nStep {n}: writing the module and checking the forecast.\n"
        unit = [text]
        content.append(text)
        for name, args in _unit_calls(n):
            unit.append(write(name, args))
            calls.append((name, args))
        piece = "".join(unit)
        parts.append(piece)
        length += len(piece)
        n += 1
    return Truth("".join(parts), reasoning, "".join(content), calls)


def chunked(text: str, size: int) -> list[Chunk]:
    """``text`` as engine deltas of ``size`` characters, one token each."""
    return [Chunk(text=text[i : i + size], token_ids=(0,)) for i in range(0, len(text), size)]


def _stage(family: str) -> ParseStage:
    if family == "glm47":
        return ParseStage(reasoning_parser("glm47")(None), tool_parser("glm47")(TOOLS))
    return ParseStage(reasoning_parser("qwen3")(None), tool_parser("hermes")(TOOLS))


def _run(family: str, deltas: list[Chunk]) -> list[ParsedSegment | End]:
    stage = _stage(family)
    feed = stage.feed
    out: list[ParsedSegment | End] = []
    extend = out.extend
    for delta in deltas:
        extend(feed(delta))
    extend(feed(Finished(reason="stop", prompt_tokens=0)))
    return out


def _time_run(family: str, deltas: list[Chunk]) -> None:
    """``_run`` without keeping the segments: a growing list of them is the harness's cost, not the stage's."""
    stage = _stage(family)
    feed = stage.feed
    for delta in deltas:
        feed(delta)
    feed(Finished(reason="stop", prompt_tokens=0))


def check(truth: Truth, out: list[ParsedSegment | End], delta: int | None = None) -> None:
    """The stage's segments say exactly what the output was built from.

    With one token per ``delta`` characters, the reasoning tokens are the deltas that fell in
    reasoning: the count of reasoning characters over ``delta``, give or take the deltas that
    straddle a tag.
    """
    end = out[-1]
    assert isinstance(end, End)
    merged = merge_segments([s for s in out if not isinstance(s, End)])
    assert "".join(s.text for s in merged if isinstance(s, Reasoning)) == truth.reasoning
    assert "".join(s.text for s in merged if isinstance(s, Content)) == truth.content
    got = [(s.name, json.loads(s.arguments)) for s in merged if isinstance(s, ToolCall)]
    assert got == truth.calls
    if delta is not None:
        # A held open tag counts with the reasoning it introduces.
        assert abs(end.reasoning_tokens - len(truth.reasoning) / delta) <= 2 + len("<think>") / delta
        assert end.output_tokens == -(-len(truth.output) // delta)


def whole_repeat(size: int) -> int:
    """Runs of a whole-text parse, best taken, for accord and the peers alike: a parse of 100 KB
    takes a few milliseconds, so three runs leave its figure to the machine's jitter."""
    return 10 if size < 1000 * KB else 5


def _cpu(run: Callable[[], object], repeat: int) -> float:
    """Best process CPU time of ``repeat`` runs, gc off during each, as ``peer_parsers.cpu`` measures
    (one collection before the runs, not one before each: see there)."""
    best = float("inf")
    gc.collect()
    for _ in range(repeat):
        gc.disable()
        try:
            start = time.process_time()
            run()
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
    return best


@pytest.mark.benchmark
@pytest.mark.parametrize("family", ["glm47", "hermes"])
def test_parse_stage_throughput_and_linearity(family: str) -> None:
    """ParseStage streams linearly and its segments are the ground truth at every size."""
    print(f"\nparse stage, {family}, {DELTA}-character deltas (target >= {STREAM_TARGET} MB/s streamed)")
    cases: dict[int, tuple[str, list[Chunk]]] = {}
    for size in SIZES:
        truth = build(family, size)
        text = truth.output
        deltas = chunked(text, DELTA)
        check(truth, _run(family, deltas), DELTA)
        check(truth, _run(family, chunked(text, len(text))))
        cases[size] = (text, deltas)
    # The sizes take turns, round after round, and each keeps its best: a change in the machine's
    # speed while the test runs (seen: twice as slow for a minute on a shared 2-core guest) then falls
    # on every size alike instead of on the ratio between the first size and the last.
    seconds = dict.fromkeys(SIZES, float("inf"))
    whole = dict.fromkeys(SIZES, float("inf"))
    for _ in range(ROUNDS):
        for size, (text, deltas) in cases.items():
            whole_text = chunked(text, len(text))
            run = _cpu(lambda d=deltas: _time_run(family, d), 1)  # type: ignore[misc]
            seconds[size] = min(seconds[size], run)
            run = _cpu(lambda w=whole_text: _time_run(family, w), whole_repeat(size) // 2)  # type: ignore[misc]
            whole[size] = min(whole[size], run)
    streamed: dict[int, float] = {}
    for size, (text, deltas) in cases.items():
        streamed[size] = seconds[size] / len(text)
        mb = len(text.encode()) / 1e6
        print(
            f"  {len(text) / 1000:7.0f} KB: streamed {mb / seconds[size]:6.2f} MB/s "
            f"({seconds[size] / len(deltas) * 1e6:5.2f} us/delta), whole {mb / whole[size]:6.2f} MB/s"
        )
    ratio = streamed[SIZES[-1]] / streamed[SIZES[0]] * 10
    print(f"  1 MB / 100 KB cost ratio: {ratio:.2f} (target {LINEAR_TARGET}, asserted {LINEAR_LIMIT})")
    assert ratio <= LINEAR_LIMIT


def streamed_seconds(family: str, size: int, rounds: int) -> float:
    """Best process CPU time to stream an output of ``size`` in ``DELTA``-character deltas."""
    text = build(family, size).output
    deltas = chunked(text, DELTA)
    return min(_cpu(lambda: _time_run(family, deltas), 1) for _ in range(rounds))


#: The compiled-against-interpreted comparison: the output's size, and how many times the two take turns.
COMPARED_SIZE = 300 * KB
TURNS = 3


@pytest.mark.benchmark
@pytest.mark.parametrize("family", ["glm47", "hermes"])
def test_parse_stage_compiled_against_interpreted(family: str) -> None:
    """The compiled stage (setup.py, mypyc) against the same source interpreted, taking turns."""
    if not is_compiled(accord.pipeline.parse):
        pytest.skip("this install runs the parse stage interpreted (no compiler, or ACCORD_PURE_PYTHON)")
    child = [
        sys.executable,
        "-m",
        "tests.interpreted",
        "tests.benchmarks.test_parse_stage_bench",
        family,
        str(COMPARED_SIZE),
        "2",
    ]
    compiled = interpreted = float("inf")
    for _ in range(TURNS):
        compiled = min(compiled, streamed_seconds(family, COMPARED_SIZE, 2))
        done = subprocess.run(child, cwd=ROOT, capture_output=True, text=True, timeout=600, check=True)
        report = json.loads(done.stdout.splitlines()[-1])
        assert report["compiled"] is False
        interpreted = min(interpreted, report["seconds"])
    mb = len(build(family, COMPARED_SIZE).output.encode()) / 1e6
    print(
        f"\nparse stage, {family}, {COMPARED_SIZE // KB} KB streamed in {DELTA}-character deltas: compiled "
        f"{mb / compiled:.2f} MB/s, interpreted {mb / interpreted:.2f} MB/s ({interpreted / compiled:.2f}x)"
    )
    assert compiled < interpreted


@pytest.mark.parametrize("family", ["glm47", "hermes"])
def test_parse_stage_ground_truth_small(family: str) -> None:
    """The benchmark's own check holds on a small output, so a broken stage fails outside benchmarks too."""
    truth = build(family, 5 * KB)
    text = truth.output
    for size in (1, 3, DELTA, 17):
        deltas = chunked(text, size)
        check(truth, _run(family, deltas), size)


#: The peer comparison: the script run under the peers' Python, and the issue's target for accord's
#: whole-text MB/s over the fastest peer's.
PEER_SCRIPT = Path(__file__).with_name("peer_parsers.py")
PEERS = ("sglang", "vllm")
PEER_WHOLE_TARGET = 2.0
#: A peer's streamed run projected past this many CPU seconds is not run; its 100 KB figure stands in.
PEER_STREAM_LIMIT_S = 60


def _peer_parsers(python: str, family: str, truth: Truth, fallback: dict[str, Any]) -> dict[str, Any]:
    job = {
        "family": family,
        "output": truth.output,
        "tools": [{"name": t.name, "parameters": t.parameters} for t in TOOLS],
        "truth": {"reasoning": truth.reasoning, "content": truth.content, "calls": truth.calls},
        "delta": DELTA,
        "repeat": {
            "streamed": 5 if len(truth.output) < 1000 * KB else 3,
            "whole": whole_repeat(len(truth.output)),
        },
        "stream_limit_s": PEER_STREAM_LIMIT_S,
        "fallback": fallback,
    }
    done = subprocess.run(
        [python, str(PEER_SCRIPT)], input=json.dumps(job), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"peer_parsers.py failed:\n{done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _mbps(run: dict[str, Any]) -> float | None:
    return run["bytes"] / 1e6 / run["seconds"] if "seconds" in run else None


def _cell(mbps: float | None, width: int) -> str:
    return f"{mbps:{width}.3g}" if mbps is not None else f"{'-':>{width}}"


def _verdict(run: dict[str, Any]) -> str:
    if "correct" not in run:
        return "-"
    return "yes" if run["correct"] else "ws" if run["whitespace_only"] else "NO"


@pytest.mark.benchmark
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("family", ["glm47", "hermes"])
def test_parse_stage_against_peer_parsers(family: str) -> None:
    """Accord's parse stage and the SGLang and vLLM parsers on the same outputs, in one run."""
    python = os.environ.get("ACCORD_PARSER_PEERS", "")
    if not python:
        pytest.skip(
            "no peer parsers: run `bash .ci/parser-peers.sh`, export ACCORD_PARSER_PEERS=<its python>"
        )
    if not os.access(python, os.X_OK):
        pytest.skip(f"ACCORD_PARSER_PEERS={python} is not an executable")
    print(
        f"\nparse stage vs peer parsers, {family}: MB/s (process CPU time, best of runs), streamed in "
        f"{DELTA}-character deltas (the peers get each special token as one delta, with its id)"
    )
    print(
        f"  {'size':>8} | {'streamed: accord':>16} {'sglang':>7} {'vllm':>7} | {'whole: accord':>13} "
        f"{'sglang':>7} {'vllm':>7} | accord/fastest peer, whole | correct streamed/whole"
    )
    fallback: dict[str, Any] = {}
    notes: list[str] = []
    for size in SIZES:
        truth = build(family, size)
        text = truth.output
        deltas = chunked(text, DELTA)
        whole_text = chunked(text, len(text))
        check(truth, _run(family, deltas), DELTA)
        check(truth, _run(family, whole_text))
        mb = len(text.encode()) / 1e6
        streamed = mb / _cpu(lambda d=deltas: _time_run(family, d), 5 if size < 1000 * KB else 3)  # type: ignore[misc]
        # accord's whole-text runs are split around the peers' (as many in all as theirs), so that a
        # change in the machine's speed while the peers run moves both figures alike.
        runs = whole_repeat(size)
        before = _cpu(lambda w=whole_text: _time_run(family, w), (runs + 1) // 2)  # type: ignore[misc]
        peers = _peer_parsers(python, family, truth, fallback)
        after = _cpu(lambda w=whole_text: _time_run(family, w), runs // 2)  # type: ignore[misc]
        whole = mb / min(before, after)
        label = f"{len(text) / 1000:5.0f} KB"
        streamed_cells, whole_cells, verdicts, peer_whole = [], [], [], []
        for peer in PEERS:
            result = peers.get(peer, {})
            if "error" in result:
                notes.append(f"  {label} {peer}: failed: {result['error']}")
            on_stream, on_whole = result.get("streamed", {}), result.get("whole", {})
            stand_in = "*" if "note" in on_stream and "seconds" in on_stream else " "
            streamed_cells.append(_cell(_mbps(on_stream), 6) + stand_in)
            whole_cells.append(_cell(_mbps(on_whole), 7))
            verdicts.append(f"{peer} {_verdict(on_stream)}/{_verdict(on_whole)}")
            if (mbps := _mbps(on_whole)) is not None:
                peer_whole.append(mbps)
            for mode, run in (("streamed", on_stream), ("whole", on_whole)):
                notes.extend(
                    f"  {label} {peer} {mode}: {run[key]}" for key in ("note", "mismatch") if run.get(key)
                )
            if size == SIZES[0] and "seconds" in on_stream:
                fallback[peer] = on_stream
        ratio = "no peer figure"
        if peer_whole:
            fastest = max(peer_whole)
            ratio = (
                f"{whole / fastest:5.1f}x ({'met' if whole >= PEER_WHOLE_TARGET * fastest else 'NOT met'})"
            )
        print(
            f"  {label} | {streamed:16.3g} {' '.join(streamed_cells)} | {whole:13.3g} {' '.join(whole_cells)} | "
            f"{ratio:>26} | {', '.join(verdicts)}"
        )
    print(f"  target: accord's whole >= {PEER_WHOLE_TARGET:.0f}x the fastest peer's (reported, not asserted)")
    print("  correct: yes = the ground truth; ws = only whitespace differs; NO = text or calls differ")
    print("  * = not run at this size (projected past the limit): the figure is the 100 KB output's")
    for note in notes:
        print(note)


if __name__ == "__main__":
    # The interpreted side of the comparison above: ``python -m tests.interpreted`` runs this.
    family, size, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    report = {
        "compiled": is_compiled(accord.pipeline.parse),
        "seconds": streamed_seconds(family, size, rounds),
    }
    print(json.dumps(report))
