"""Projection cost per protocol (issue 14 benchmark): Responses, Chat Completions, Messages, same run.

Two figures per protocol over one reasoning + message + tool-call output of 50,000 deltas:

* the whole chain without HTTP (scripted engine -> parse -> items -> log -> the protocol's
  bytes), where Chat Completions and Messages take the run's batches through a Reframer;
* the projection alone: fold the finished log again and project + frame every event.

Prints the rates and the ratios to Responses; asserts only loose same-run ratios (the
machine is shared and noisy; the issue's target is within 10%).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import anyio
import pytest

from accord.adapters.http.exchange import sse_frame
from accord.engine.protocol import GenerationRequest
from accord.engine.scripted import Rule, Script, ScriptedEngine
from accord.events.chat_wire import ChatProjection, chat_frame
from accord.events.messages_wire import MessagesProjection, messages_frame
from accord.events.reframe import chat_reframer, messages_reframer
from accord.events.response import Opened, ResponseEvent, Snapshot
from accord.events.wire import EventLog, WireEvent
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import ParseStage
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.run import ResponseRun
from accord.pipeline.segments import ToolSpec
from accord.pipeline.tools import tool_parser

DELTAS = 50_000
ROUNDS = 3
PROJECTION_ROUNDS = 5
SPEC = [
    ToolSpec(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}})
]


def _chunks() -> list[str]:
    third = DELTAS // 3
    chunks = ["<think>"] + ["plan "] * third + ["</think>"] + ["word "] * third
    chunks += ["<tool_call>", '{"name": "get_weather", "arguments": {"city": "Paris"}}', "</tool_call>"]
    return chunks + ["more "] * (DELTAS - len(chunks))


def _run() -> ResponseRun:
    counter = itertools.count()
    return ResponseRun(
        engine=ScriptedEngine(Script(rules=[Rule(chunks=_chunks())])),
        request=GenerationRequest(prompt="p"),
        opened=Opened(response_id="resp_bench", created_at=1, model="m"),
        parse=ParseStage(reasoning_parser("qwen3")(None), tool_parser("hermes")(SPEC)),
        tracker=ItemTracker(new_id=lambda p: f"{p}_{next(counter)}", now=lambda: 2, tools=SPEC),
        keepalive_interval=0,
    )


def _chain(protocol: str) -> tuple[float, int, list[ResponseEvent]]:
    run = _run()
    size = 0
    framer = {"chat": chat_reframer(include_usage=True), "messages": messages_reframer()}.get(protocol)

    async def emit(batch: list[WireEvent]) -> None:
        nonlocal size
        if framer is None:
            size += sum(len(sse_frame(e)) for e in batch)
        else:
            size += len(framer.feed(batch, run.log))

    t0 = time.process_time()
    anyio.run(run.run, emit)
    return time.process_time() - t0, size, run.log.events


def _projection(log: list[ResponseEvent], protocol: str) -> float:
    t0 = time.process_time()
    if protocol == "responses":
        event_log = EventLog()
        for event in log:
            for wire in event_log.append(event):
                sse_frame(wire)
        return time.process_time() - t0
    snapshot = Snapshot()
    feed: Callable[[ResponseEvent, Snapshot], list[bytes]]
    if protocol == "chat":
        chat = ChatProjection(include_usage=True)
        feed = lambda e, s: [chat_frame(o) for o in chat.feed(e, s)]  # noqa: E731
    else:
        messages = MessagesProjection()
        feed = lambda e, s: [messages_frame(o) for o in messages.feed(e, s)]  # noqa: E731
    for event in log:
        snapshot.apply(event)
        feed(event, snapshot)
    return time.process_time() - t0


@pytest.mark.benchmark
def test_chat_and_messages_cost_about_what_responses_costs() -> None:
    protocols = ("responses", "chat", "messages")
    # Best of interleaved rounds, in this process's CPU time: one wall-clock run each measured
    # Messages at 2.19x Responses on a busy machine, where other runs of the same code gave 1.2-1.4x.
    rounds = [{p: _chain(p) for p in protocols} for _ in range(ROUNDS)]
    chain = {p: min((r[p] for r in rounds), key=lambda c: c[0]) for p in protocols}
    log = chain["responses"][2]
    # The same for the projection alone: CI once measured Messages at 1.61x Responses taking
    # each protocol's three wall-clock runs back to back, where runs here give 0.85-0.88x.
    alone_rounds = [{p: _projection(log, p) for p in protocols} for _ in range(PROJECTION_ROUNDS)]
    alone = {p: min(r[p] for r in alone_rounds) for p in protocols}
    lines = [f"\nprotocols: {DELTAS} deltas, {len(log)} response events"]
    for p in protocols:
        seconds, size, _ = chain[p]
        lines.append(
            f"  {p:9}: chain {DELTAS / seconds:>9,.0f} deltas/s ({seconds / chain['responses'][0]:.2f}x Responses), "
            f"{size / 1e6:.1f} MB; projection+frame alone {len(log) / alone[p]:>9,.0f} events/s "
            f"({alone[p] / alone['responses']:.2f}x Responses)"
        )
    print("\n".join(lines))
    for p in ("chat", "messages"):
        # Loose bounds: the extra projections ride on the Responses one inside the run today.
        assert chain[p][0] < 2.0 * chain["responses"][0], p
        assert alone[p] < 1.5 * alone["responses"], p
