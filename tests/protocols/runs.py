"""One scripted run through the real stage chain, projected onto all three protocols.

The run is the one ``tests/pipeline/test_run_properties.py`` drives (scripted engine,
reasoning splitter, tool-call parser, ItemTracker, EventLog); its Responses events come from
the run's own egress, and its response log is then projected onto Chat Completions and
Messages event by event, with the Snapshot folded up to that event, the way
``EventLog.append`` projects Responses.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec

from accord.adapters.requests import Sealer
from accord.engine.protocol import GenerationRequest
from accord.engine.scripted import Rule, Script, ScriptedEngine
from accord.events.chat_wire import ChatProjection, chat_completion
from accord.events.messages_wire import MessagesProjection, message_body
from accord.events.response import Opened, ResponseEvent, Snapshot
from accord.events.wire import WireEvent
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import ParseStage
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.run import ResponseRun
from accord.pipeline.tools import tool_parser
from tests.parsers.json_tool_helpers import OFFERED

SEALER = Sealer.from_secret("protocol-tests")


@dataclass
class Projected:
    responses: list[dict[str, Any]]
    log: list[ResponseEvent]
    snapshot: Snapshot
    chat: list[dict[str, Any]]
    messages: list[dict[str, Any]]

    def chat_body(self) -> dict[str, Any]:
        return chat_completion(self.snapshot)

    def message_body(self) -> dict[str, Any]:
        return message_body(self.snapshot)


def run_rule(rule: Rule, *, include_usage: bool = True, backend: str = "asyncio") -> Projected:
    counter = itertools.count()
    run = ResponseRun(
        engine=ScriptedEngine(Script(rules=[rule])),
        request=GenerationRequest(prompt="a prompt of some words"),
        opened=Opened(response_id="resp_test", created_at=1, model="m", echo={"metadata": {}}),
        parse=ParseStage(reasoning_parser("qwen3")(None), tool_parser("hermes")(OFFERED)),
        tracker=ItemTracker(
            new_id=lambda p: f"{p}_{next(counter)}", now=lambda: 2, tools=OFFERED, seal=SEALER.seal
        ),
        keepalive_interval=0,
    )
    wire: list[WireEvent] = []

    async def emit(events: list[WireEvent]) -> None:
        wire.extend(events)

    anyio.run(run.run, emit, backend=backend)
    chat, messages = project(run.log.events, include_usage=include_usage)
    return Projected(
        responses=[msgspec.to_builtins(e) for e in wire],
        log=run.log.events,
        snapshot=run.log.snapshot,
        chat=chat,
        messages=messages,
    )


def project(
    log: list[ResponseEvent], *, include_usage: bool, snapshot: Snapshot | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Both projections of ``log``; with ``snapshot``, that one (later) Snapshot for every event."""
    chat_projection = ChatProjection(include_usage=include_usage)
    messages_projection = MessagesProjection()
    folding = Snapshot()
    chat: list[Any] = []
    messages: list[Any] = []
    for event in log:
        if snapshot is None:
            folding.apply(event)
        seen = folding if snapshot is None else snapshot
        chat.extend(chat_projection.feed(event, seen))
        messages.extend(messages_projection.feed(event, seen))
    return msgspec.to_builtins(chat), msgspec.to_builtins(messages)
