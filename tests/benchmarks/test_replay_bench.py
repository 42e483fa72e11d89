"""Audit and replay throughput (issue 8 benchmark): responses/s over 1,000 recorded responses.

Audit: 1,000 captured SSE streams (reasoning, an answer, sometimes tool calls; ~100-200 events each)
read from disk and checked; the floor is reading the same files and JSON-decoding every event without
checking anything. Replay: 1,000 accord traces run again through the chain and compared; its floor is
auditing the same traces. Prints the rates (target: >= 200 responses/s audited); asserts only same-run
ratios, since machines are noisy.
"""

from __future__ import annotations

import io
import itertools
import shutil
import time
from pathlib import Path

import anyio
import msgspec
import pytest

from accord.adapters.traces import TraceRecorder
from accord.events.generation import Chunk, Finished
from accord.events.trace import TraceOptions
from accord.replay.audit import audit_path
from accord.replay.replay import replay_paths, trace_files
from accord.replay.sse import parse_sse
from tests.replay.builders import StreamBuilder, to_sse
from tests.replay.test_trace_units import fake_prepared

RESPONSES = 1_000


def _stream(n: int) -> str:
    words = [f"w{n % 7}{i} " for i in range(60)]
    builder = StreamBuilder(f"resp_{n}").reasoning([f"step {i} " for i in range(40)]).message(words)
    if n % 3 == 0:
        builder.function_call(
            "get_weather", ['{"city": ', f'"City{n}"', "}"], item_id=f"fc_{n}", call_id=f"call_{n}"
        )
    return to_sse(builder.finish())


def _write_streams(directory: Path) -> int:
    size = 0
    for n in range(RESPONSES):
        text = _stream(n)
        size += len(text)
        (directory / f"{n:05d}.sse").write_text(text)
    return size


def _decode_floor(directory: Path) -> int:
    decode = msgspec.json.Decoder().decode
    events = 0
    for path in sorted(directory.iterdir()):
        for frame in parse_sse(path.read_text()).frames:
            decode(frame.data)
            events += 1
    return events


@pytest.mark.benchmark
def test_audit_throughput_against_decode_floor(tmp_path: Path) -> None:
    size = _write_streams(tmp_path)
    t0 = time.perf_counter()
    events = _decode_floor(tmp_path)
    floor_s = time.perf_counter() - t0
    out = io.StringIO()
    t0 = time.perf_counter()
    status = audit_path(tmp_path, out)
    audit_s = time.perf_counter() - t0
    assert status == 0, out.getvalue()[-2000:]
    rate = RESPONSES / audit_s
    print(
        f"\naudit: {RESPONSES} streams, {events} events, {size / 1e6:.1f} MB\n"
        f"  audit      : {rate:,.0f} responses/s ({audit_s:.2f} s; target >= 200/s: "
        f"{'met' if rate >= 200 else 'NOT met'})\n"
        f"  floor      : {RESPONSES / floor_s:,.0f} responses/s (read + SSE + JSON decode only, {floor_s:.2f} s)\n"
        f"  ratio      : {audit_s / floor_s:.1f}x the floor"
    )
    # Checking is one pass over decoded events; it must stay within a small factor of decoding them.
    assert audit_s / floor_s < 15


async def _record_templates(directory: Path) -> list[Path]:
    """A few traces of real chain runs (reasoning + answer, with and without a call-like text)."""
    recorder = TraceRecorder(directory, TraceOptions(reasoning_parser="qwen3", tool_parser="none"))
    for n in range(4):
        chunks = [
            "<think>",
            *[f"plan {i} " for i in range(30 + n)],
            "</think>",
            *[f"word{i} " for i in range(60)],
        ]
        events = [Chunk(text=c, token_ids=(i,)) for i, c in enumerate(chunks)]
        prepared, log = await fake_prepared([*events, Finished(reason="stop", prompt_tokens=9)])
        await recorder.finish(prepared, log, "completed")
    async with recorder.running():
        pass
    return sorted([Path(p) async for p in anyio.Path(directory).iterdir()])


@pytest.mark.benchmark
def test_replay_throughput_against_audit(tmp_path: Path) -> None:
    templates = anyio.run(_record_templates, tmp_path / "templates")
    traces = tmp_path / "traces"
    traces.mkdir()
    for n, template in zip(range(RESPONSES), itertools.cycle(templates), strict=False):
        shutil.copy(template, traces / f"{n:05d}.jsonl")
    paths = trace_files(traces)
    t0 = time.perf_counter()
    results = anyio.run(replay_paths, paths, None)
    replay_s = time.perf_counter() - t0
    assert not any(r.error or r.changed or r.violated for r in results)
    t0 = time.perf_counter()
    assert audit_path(traces, io.StringIO()) == 0
    audit_s = time.perf_counter() - t0
    print(
        f"\nreplay: {RESPONSES} traces\n"
        f"  replay     : {RESPONSES / replay_s:,.0f} responses/s ({replay_s:.2f} s)\n"
        f"  audit      : {RESPONSES / audit_s:,.0f} responses/s (same traces, {audit_s:.2f} s)\n"
        f"  ratio      : replay takes {replay_s / audit_s:.1f}x the audit"
    )
    # A replay is a chain run plus two audits and a comparison; a few audits' worth, not hundreds.
    assert replay_s / audit_s < 25
