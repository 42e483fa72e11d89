"""Traces (SPEC R1): one JSON-lines file per response, written off the request path.

A trace holds what is needed to run the response again and to judge the rerun: the request (and the
stored history and item references it was resolved against), the options the chain was built with,
every engine event with its time offset and token ids, every wire event as sent, the final response
and how the response ended. Line by line::

    {"kind": "trace", "version": 1, "response_id", "created_at", "stream", "redacted", "options",
     "request", "history", "references"}
    {"kind": "engine", "t": 0.012, "event": {"kind": "chunk", "text": "...", "token_ids": [...]}}
    {"kind": "wire", "t": 0.013, "event": {"type": "response.output_text.delta", ...}}
    {"kind": "final", "response": {...}}
    {"kind": "end", "cause": "completed" | "incomplete" | "failed:<code>" | "client_disconnected" | ...}

Strategy: a per-run observer only appends ``(offset, event)`` pairs to two lists -- the events are
frozen structs, so nothing is copied or encoded while the stream runs. When the response is over, the
finish hook hands the pairs to a bounded queue without waiting; a writer task encodes and writes them in
a worker thread. A full queue (a disk slower than the traffic) drops the trace and counts it in
``/metrics``: traces must never slow down or break a stream.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio
import msgspec
import structlog

from accord.events.generation import GenerationOutput
from accord.events.wire import EventLog, WireEvent

if TYPE_CHECKING:
    from accord.adapters.http.app import AccordApp
    from accord.adapters.service import Prepared
    from accord.config import Settings
    from accord.pipeline.run import RunObserver

log = structlog.get_logger("accord.trace")

TRACE_VERSION = 1
REDACTED = "[redacted]"
#: Keys whose string values are prompt text; everything structural (types, roles, ids, names) stays.
_PROMPT_TEXT_KEYS = frozenset(
    {
        "text",
        "content",
        "output",
        "input",
        "instructions",
        "arguments",
        "refusal",
        "encrypted_content",
        "image_url",
        "file_data",
        "file_url",
        "summary",
    }
)


class TraceOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The server options a response was produced under; replay builds its chain from them."""

    reasoning_parser: str
    tool_parser: str
    profile: str | None = None
    model: str = ""
    keepalive_interval: float = 10.0
    web_search: str = "refuse"
    vision: bool = False
    #: Reasoning was sealed into ``encrypted_content`` (replay cannot reproduce the ciphertext).
    sealed: bool = False


class RunTrace:
    """The observer of one run: remembers engine and wire events with their time offsets."""

    __slots__ = ("engine", "started", "wire")

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.engine: list[tuple[float, GenerationOutput]] = []
        self.wire: list[tuple[float, WireEvent]] = []

    def on_engine(self, event: GenerationOutput) -> None:
        self.engine.append((time.monotonic() - self.started, event))

    def on_wire(self, event: WireEvent) -> None:
        self.wire.append((time.monotonic() - self.started, event))


class _Job(NamedTuple):
    path: Path
    header: dict[str, Any]
    trace: RunTrace
    final: dict[str, Any]
    cause: str
    redact: bool


class TraceStatistics(msgspec.Struct, frozen=True):
    written: int
    dropped: int
    failed: int


def redact(value: Any, *, under_text_key: bool = False) -> Any:
    """``value`` with every prompt-text string replaced by a marker (never by "", which some inputs refuse)."""
    if isinstance(value, str):
        return REDACTED if under_text_key and value else value
    if isinstance(value, list):
        return [redact(v, under_text_key=under_text_key) for v in value]
    if isinstance(value, dict):
        return {k: redact(v, under_text_key=k in _PROMPT_TEXT_KEYS) for k, v in value.items()}
    return value


def _redact_request(request: dict[str, Any]) -> dict[str, Any]:
    out = dict(request)
    for key in ("input", "instructions"):
        if key in out:
            out[key] = redact(out[key], under_text_key=True)
    return out


def _redact_event(event: dict[str, Any]) -> dict[str, Any]:
    # Lifecycle events echo the request's instructions; the model's own output stays.
    response = event.get("response")
    if isinstance(response, dict) and response.get("instructions"):
        event = {
            **event,
            "response": {**response, "instructions": redact(response["instructions"], under_text_key=True)},
        }
    return event


class TraceRecorder:
    """Collects a :class:`RunTrace` per run and writes finished ones into ``directory``."""

    def __init__(
        self,
        directory: Path,
        options: TraceOptions,
        *,
        redact: bool = False,
        queue_size: int = 1024,
        counters: Counter[str] | None = None,
    ) -> None:
        self.directory = directory
        self.options = options
        self.redact = redact
        self.counters: Counter[str] = counters if counters is not None else Counter()
        self._send, self._receive = anyio.create_memory_object_stream[_Job](queue_size)
        self._encode = msgspec.json.Encoder().encode
        directory.mkdir(parents=True, exist_ok=True)

    def observer(self) -> RunTrace:
        return RunTrace()

    def statistics(self) -> TraceStatistics:
        c = self.counters
        return TraceStatistics(c["traces_written_total"], c["traces_dropped_total"], c["traces_failed_total"])

    async def finish(
        self, prepared: Prepared, log_: EventLog, cause: str, *, references: dict[str, Any] | None = None
    ) -> None:
        """Queue the finished run's trace; never waits (a full queue drops it)."""
        trace = next((o for o in prepared.run.observers if isinstance(o, RunTrace)), None)
        if trace is None:
            return
        run = prepared.run
        # Unset fields (None) are left out: they read back as their defaults and make traces shorter.
        request = {k: v for k, v in msgspec.to_builtins(prepared.request).items() if v is not None}
        header: dict[str, Any] = {
            "kind": "trace",
            "version": TRACE_VERSION,
            "response_id": run.opened.response_id,
            "created_at": run.opened.created_at,
            "stream": bool(prepared.request.stream),
            "redacted": self.redact,
            "options": msgspec.to_builtins(self.options),
            "request": _redact_request(request) if self.redact else request,
            "history": redact(list(prepared.history), under_text_key=True)
            if self.redact
            else list(prepared.history),
            "references": (redact(references, under_text_key=True) if self.redact else references) or {},
        }
        final = log_.snapshot.body() if log_.snapshot.response_id else {}
        job = _Job(
            self.directory / f"{run.opened.response_id}.jsonl", header, trace, final, cause, self.redact
        )
        try:
            self._send.send_nowait(job)
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.counters["traces_dropped_total"] += 1

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The writer, for the app's lifespan: drains what is queued when the server stops."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._writer)
            try:
                yield
            finally:
                self._send.close()

    async def _writer(self) -> None:
        async with self._receive:
            async for job in self._receive:
                try:
                    await anyio.to_thread.run_sync(self.write, job)
                except OSError as exc:
                    self.counters["traces_failed_total"] += 1
                    log.warning("trace not written", path=str(job.path), error=str(exc))
                else:
                    self.counters["traces_written_total"] += 1

    def write(self, job: _Job) -> None:
        """Encode and write one trace (runs in a worker thread)."""
        encode = self._encode
        lines = [encode(job.header)]
        for t, engine_event in job.trace.engine:
            lines.append(encode({"kind": "engine", "t": round(t, 6), "event": engine_event}))
        for t, wire_event in job.trace.wire:
            event = msgspec.to_builtins(wire_event)
            lines.append(
                encode(
                    {"kind": "wire", "t": round(t, 6), "event": _redact_event(event) if job.redact else event}
                )
            )
        if job.final:
            final = _redact_event({"response": job.final})["response"] if job.redact else job.final
            lines.append(encode({"kind": "final", "response": final}))
        lines.append(encode({"kind": "end", "cause": job.cause}))
        tmp = job.path.with_suffix(".jsonl.part")
        tmp.write_bytes(b"\n".join(lines) + b"\n")
        # Renamed into place whole, so a reader never sees half a trace.
        tmp.replace(job.path)


def trace_options(app: AccordApp, settings: Settings) -> TraceOptions:
    service = app.service
    return TraceOptions(
        reasoning_parser=settings.reasoning_parser or service.profile.reasoning_parser,
        tool_parser=settings.tool_parser or service.profile.tool_parser,
        profile=service.profile.name,
        model=service.engine.model_name,
        keepalive_interval=service.keepalive_interval,
        web_search=service.web_search,
        vision=service.vision,
        sealed=service.sealer is not None,
    )


def attach_traces(app: AccordApp, settings: Settings) -> TraceRecorder | None:
    """``--trace-dir``: record every response the app runs (``--trace-redact`` drops prompt text).

    Attach it after anything that replaces ``app.service`` (the store): the observer factory is
    installed on the service present now.
    """
    if settings.trace_dir is None:
        return None
    recorder = TraceRecorder(
        Path(settings.trace_dir),
        trace_options(app, settings),
        redact=settings.trace_redact,
        counters=app.metrics.extra_counters,
    )
    service = app.service
    earlier = service.observers

    def observers() -> list[RunObserver]:
        return [*earlier(), recorder.observer()]

    service.observers = observers

    async def finish(prepared: Prepared, log_: EventLog, cause: str) -> None:
        from accord.adapters.requests import referenced_ids

        ids = referenced_ids(prepared.request)
        references = await app.service.references(ids) if ids else None
        await recorder.finish(prepared, log_, cause, references=references)

    app.finish_hooks.append(finish)
    app.lifespan_hooks.append(recorder.running)
    # Present from the start, so a scrape shows zero drops rather than no series at all.
    for name in ("traces_written_total", "traces_dropped_total", "traces_failed_total"):
        app.metrics.extra_counters[name] += 0
    return recorder
