"""The parts of traces and replay, one at a time: redaction, the observer, the writer, rechunking, ids,
and what the comparison forgives."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from accord.adapters.requests import ResponsesRequest
from accord.adapters.service import Prepared
from accord.adapters.traces import RunTrace, TraceRecorder, TraceStatistics
from accord.events.generation import Chunk, EngineFailed, Finished, GenerationOutput
from accord.events.trace import REDACTED, TraceOptions, redact
from accord.events.wire import EventLog
from accord.replay._compare import comparable_stream, difference, stream_difference
from accord.replay._replay_engine import TraceEngine, rechunk, recorded_ids
from accord.replay._tracefile import load_trace
from accord.replay.replay import _service_for

pytestmark = pytest.mark.anyio


async def fake_prepared(events: list[GenerationOutput] | None = None) -> tuple[Prepared, EventLog]:
    """A real run of the chain on scripted engine events, observed by a RunTrace."""
    service = _service_for({"reasoning_parser": "qwen3", "tool_parser": "none"}, {})
    service.engine = TraceEngine(
        "m",
        events
        or [Chunk(text="<think>a</think>b", token_ids=(1, 2)), Finished(reason="stop", prompt_tokens=3)],
        raise_name=None,
        go_silent=False,
    )
    service.observers = lambda: [RunTrace()]
    prepared = await service.prepare(ResponsesRequest(model="m", input="hi", instructions="secret"))

    async def emit(batch: list[Any]) -> None:
        return None

    log = await prepared.run.run(emit)
    return prepared, log


def test_redaction_replaces_prompt_text_and_keeps_structure() -> None:
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "my secret"}]},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"a": 1}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "42"},
        {"role": "user", "content": "plain"},
    ]
    assert redact(items, under_text_key=True) == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": REDACTED}]},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": REDACTED},
        {"type": "function_call_output", "call_id": "call_1", "output": REDACTED},
        {"role": "user", "content": REDACTED},
    ]
    assert redact("", under_text_key=True) == ""


async def test_the_observer_sees_engine_and_wire_events_in_order(anyio_backend: str) -> None:
    prepared, _ = await fake_prepared()
    [trace] = [o for o in prepared.run.observers if isinstance(o, RunTrace)]
    assert [type(e).__name__ for _, e in trace.engine] == ["Chunk", "Finished"]
    assert [e.sequence_number for _, e in trace.wire] == list(range(len(trace.wire)))
    offsets = [t for t, _ in trace.engine + trace.wire]
    assert all(t >= 0 for t in offsets)


async def test_written_traces_read_back_whole(tmp_path: Path, anyio_backend: str) -> None:
    recorder = TraceRecorder(tmp_path, TraceOptions(reasoning_parser="qwen3", tool_parser="none"))
    prepared, log = await fake_prepared()
    await recorder.finish(prepared, log, "completed")
    async with recorder.running():
        pass
    [path] = [p async for p in anyio.Path(tmp_path).iterdir()]  # no .part file left behind
    trace = load_trace(Path(path))
    assert trace.cause == "completed"
    assert trace.header["request"] == {"model": "m", "input": "hi", "instructions": "secret"}
    assert trace.engine[0][1] == Chunk(text="<think>a</think>b", token_ids=(1, 2))
    assert trace.wire[-1]["type"] == "response.completed"
    assert trace.final == trace.wire[-1]["response"]


async def test_redacted_traces_scrub_the_echoed_instructions(tmp_path: Path, anyio_backend: str) -> None:
    recorder = TraceRecorder(
        tmp_path, TraceOptions(reasoning_parser="qwen3", tool_parser="none"), redact=True
    )
    prepared, log = await fake_prepared()
    await recorder.finish(prepared, log, "completed")
    async with recorder.running():
        pass
    [path] = [p async for p in anyio.Path(tmp_path).iterdir()]
    text = await path.read_text()
    assert "secret" not in text and '"hi"' not in text
    assert '"b"' in text  # the model's own output is no prompt text


def test_rechunk_keeps_text_ids_and_the_closing_event() -> None:
    events: list[GenerationOutput] = [
        Chunk(text="hello ", token_ids=(1,)),
        Chunk(text="wor", token_ids=(2, 3)),
        Chunk(text="ld", token_ids=(4,)),
        EngineFailed(failure="engine_error", message="boom"),
    ]
    for seed in range(20):
        out = rechunk(events, random.Random(seed))
        chunks = [e for e in out if isinstance(e, Chunk)]
        assert "".join(c.text for c in chunks) == "hello world"
        assert [t for c in chunks for t in c.token_ids] == [1, 2, 3, 4]
        assert out[-1] == events[-1]
    assert rechunk(events, random.Random(5)) == rechunk(events, random.Random(5))


def test_recorded_ids_repeat_per_prefix_then_run_fresh() -> None:
    wire = [
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.output_item.added", "item": {"id": "rs_a"}},
        {"type": "response.output_item.added", "item": {"id": "fc_b", "call_id": "call_c"}},
        {"type": "response.output_item.added", "item": {"id": "fc_d", "call_id": "functions.f:0"}},
    ]
    new_id = recorded_ids(wire)
    assert [new_id("resp"), new_id("fc"), new_id("call"), new_id("fc"), new_id("rs")] == [
        "resp_1",
        "fc_b",
        "call_c",
        "fc_d",
        "rs_a",
    ]
    assert new_id("msg") == "msg_replay000001"


def test_comparison_forgives_clocks_seals_and_keepalives_only() -> None:
    opening = {"type": "response.created", "sequence_number": 0, "response": {"id": "r", "created_at": 1}}
    progress = {**opening, "type": "response.in_progress", "sequence_number": 1}
    done: dict[str, Any] = {
        "type": "response.completed",
        "sequence_number": 2,
        "response": {
            "id": "r",
            "created_at": 1,
            "completed_at": 5,
            "output": [{"type": "reasoning", "encrypted_content": "x1"}],
        },
    }
    recorded = [opening, progress, {**progress, "sequence_number": 2}, {**done, "sequence_number": 3}]
    replayed = [
        {**opening, "response": {"id": "r", "created_at": 9}},
        progress,
        {**done, "response": {**done["response"], "completed_at": 7, "output": [{"type": "reasoning"}]}},
    ]
    assert comparable_stream(recorded) == comparable_stream(replayed)
    assert stream_difference(recorded, replayed, prefix_only=False) is None
    changed = json.loads(json.dumps(replayed))
    changed[2]["response"]["id"] = "other"
    assert stream_difference(recorded, changed, prefix_only=False) == (
        "event 2 (response.completed): .response.id: recorded 'r', replayed 'other'"
    )
    assert stream_difference(recorded[:2], replayed, prefix_only=True) is None
    assert difference([1, 2], [1]) == ": 2 recorded vs 1 replayed"


async def test_a_full_queue_drops_traces_without_waiting(tmp_path: Path, anyio_backend: str) -> None:
    """A disk slower than the traffic costs traces, never stream time: finish() never blocks."""
    counters: Counter[str] = Counter()
    options = TraceOptions(reasoning_parser="qwen3", tool_parser="none")
    recorder = TraceRecorder(tmp_path, options, queue_size=1, counters=counters)
    prepared, log = await fake_prepared()
    with anyio.fail_after(1):
        for _ in range(3):
            await recorder.finish(prepared, log, "completed")
    assert counters["traces_dropped_total"] == 2
    async with recorder.running():
        pass
    assert recorder.statistics() == TraceStatistics(written=1, dropped=2, failed=0)
