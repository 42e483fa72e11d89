"""Pipeline cost (issue 2 benchmark): deltas/s through the whole chain vs. the encode+frame floor.

Runs 100,000 deltas of a reasoning + message + tool-call output through the full chain
without HTTP (scripted engine -> parse -> items -> log -> projection -> guard -> sequencer
-> SSE bytes), and separately only msgspec-encodes and SSE-frames the same wire events.
Prints both rates and their ratio; asserts only the same-run ratio (machines are noisy).
"""

from __future__ import annotations

import itertools
import time

import anyio
import pytest

from accord.adapters.http.exchange import sse_frame
from accord.engine.protocol import GenerationRequest
from accord.engine.scripted import Rule, Script, ScriptedEngine
from accord.events.response import Opened
from accord.events.wire import WireEvent
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import ParseStage
from accord.pipeline.reasoning import reasoning_parser, reasoning_parser_names
from accord.pipeline.run import ResponseRun
from accord.pipeline.segments import ToolSpec
from accord.pipeline.tools import tool_parser, tool_parser_names

DELTAS = 100_000


def _chunks() -> tuple[list[str], str, str]:
    reasoning = "qwen3" if "qwen3" in reasoning_parser_names() else "none"
    tools = "hermes" if "hermes" in tool_parser_names() else "none"
    third = DELTAS // 3
    chunks = ["<think>"] + ["plan "] * third + ["</think>"] + ["word "] * third
    chunks += ["<tool_call>", '{"name": "get_weather", "arguments": {"city": "Paris"}}', "</tool_call>"]
    chunks += ["more "] * (DELTAS - len(chunks))
    return chunks, reasoning, tools


@pytest.mark.benchmark
def test_pipeline_throughput_against_encode_floor() -> None:
    chunks, reasoning, tools = _chunks()
    counter = itertools.count()
    spec = [
        ToolSpec(
            name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}}
        )
    ]
    run = ResponseRun(
        engine=ScriptedEngine(Script(rules=[Rule(chunks=chunks)])),
        request=GenerationRequest(prompt="p"),
        opened=Opened(response_id="resp_bench", created_at=1, model="m"),
        parse=ParseStage(reasoning_parser(reasoning)(None), tool_parser(tools)(spec)),
        tracker=ItemTracker(new_id=lambda p: f"{p}_{next(counter)}", now=lambda: 2, tools=spec),
        keepalive_interval=0,
    )
    events: list[WireEvent] = []
    size = 0

    async def emit(batch: list[WireEvent]) -> None:
        nonlocal size
        events.extend(batch)
        size += sum(len(sse_frame(e)) for e in batch)

    t0 = time.perf_counter()
    anyio.run(run.run, emit)
    chain_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    floor_size = sum(len(sse_frame(e)) for e in events)
    floor_s = time.perf_counter() - t0
    assert floor_size == size
    chain_rate, floor_rate = len(chunks) / chain_s, len(chunks) / floor_s
    print(
        f"\npipeline ({reasoning}/{tools}): {len(chunks)} deltas, {len(events)} wire events, {size / 1e6:.1f} MB SSE\n"
        f"  full chain : {chain_rate:,.0f} deltas/s ({chain_s:.2f} s)\n"
        f"  floor      : {floor_rate:,.0f} deltas/s (encode + frame only, {floor_s:.2f} s)\n"
        f"  ratio      : {chain_s / floor_s:.1f}x the floor (target <= 10x; >= 50,000 deltas/s)"
    )
    assert run.log.snapshot.status == "completed"
    assert chain_s / floor_s < 30, "the chain costs far more than encoding its own output"
