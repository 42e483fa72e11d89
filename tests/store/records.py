"""Stored records made the way the server makes them: a real run of the chain on a scripted engine."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from accord.adapters.build import build_app, build_service
from accord.adapters.requests import RequestLimits, decode_request
from accord.adapters.service import Service
from accord.adapters.store import ResponseRecord, StoredItem
from accord.adapters.store._records import conversation_items, make_record
from accord.engine.protocol import GenerationRequest
from accord.engine.scripted import ScriptedEngine, load_script
from accord.events.generation import GenerationOutput
from accord.events.wire import WireEvent
from tests.serving import Server, running, scripted_settings, write_script

LIMITS = RequestLimits(max_input_items=1000, max_tools=64, max_string_chars=1_000_000)

RULES: list[dict[str, Any]] = [
    {"when": {"last_input": "^slow"}, "output": "tick " * 8, "chunk_chars": 5, "chunk_delay_s": 0.03},
    {"output": "<think>Hmm.</think>Stored answer, in pieces.", "chunk_chars": 6},
]


def service(tmp: Path, **extra: Any) -> Service:
    settings = scripted_settings(write_script(tmp, RULES), reasoning_parser="qwen3", **extra)
    return build_service(settings)


async def run_record(
    svc: Service, body: dict[str, Any], *, ttl: float | None = None
) -> tuple[ResponseRecord, list[StoredItem], list[WireEvent]]:
    """Run one request to the end and make the record the terminal hook would write."""
    request = decode_request(msgspec.json.encode({"model": "m", **body}), LIMITS)
    prepared = await svc.prepare(request)
    sent: list[WireEvent] = []

    async def emit(events: list[WireEvent]) -> None:
        sent.extend(events)

    log = await prepared.run.run(emit)
    record = make_record(
        request=request,
        events=log.events,
        keepalive_seqs=prepared.run.keepalive_seqs,
        status=log.snapshot.status,
        ttl=ttl,
    )
    return record, conversation_items(prepared.conversation.input_items, log.snapshot), sent


class RecordingEngine(ScriptedEngine):
    """The scripted engine, keeping every prompt it was asked to continue."""

    prompts: list[str]

    def generate(self, request: GenerationRequest) -> AsyncGenerator[GenerationOutput, None]:
        self.prompts.append(request.prompt)
        return super().generate(request)


@contextmanager
def recording_server(tmp: Path, rules: list[dict[str, Any]], **extra: Any) -> Iterator[Server]:
    """A real server whose engine records prompts (Qwen3 reasoning and Qwen3-Coder tool calls)."""
    values: dict[str, Any] = {"reasoning_parser": "qwen3", "tool_parser": "qwen3_coder", **extra}
    settings = scripted_settings(write_script(tmp, rules), **values)
    assert settings.script is not None
    engine = RecordingEngine(load_script(settings.script))
    engine.prompts = []
    app = build_app(settings, engine=engine)
    with running(settings, app=app) as srv:
        yield srv


def prompts(server: Server) -> list[str]:
    engine = server.app.service.engine
    assert isinstance(engine, RecordingEngine)
    return engine.prompts
