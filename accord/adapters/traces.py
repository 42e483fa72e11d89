"""Traces (SPEC R1): opt-in recording of every response, written off the request path.

The format is :mod:`accord.events.trace`, which the replay tools read back.

Strategy: a per-run observer only appends ``(offset, event)`` pairs to two lists -- the events are
frozen structs, so nothing is copied or encoded while the stream runs. When the response is over, the
run driver's ``after_run`` hook hands the pairs to a bounded queue without waiting; a writer task
encodes and writes them in a worker thread. A full queue (a disk slower than the traffic) drops the
trace and counts it in ``/metrics``: traces must never slow down or break a stream.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import msgspec
import structlog

from accord.adapters.runner import Outcome
from accord.adapters.service import Prepared
from accord.events.generation import GenerationOutput
from accord.events.trace import TRACE_VERSION, TraceOptions, encode_trace, redact, redact_request
from accord.events.wire import EventLog, WireEvent

log = structlog.get_logger("accord.trace")

#: The stored items a request's ``item_reference`` names (the service's lookup).
References = Callable[[Prepared], Awaitable[dict[str, Any] | None]]


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


async def _no_references(prepared: Prepared) -> dict[str, Any] | None:
    return None


class TraceRecorder:
    """Collects a :class:`RunTrace` per run and writes finished ones into ``directory``.

    It is a run hook (``after_run``) and, through :meth:`running`, a lifespan of the app.
    """

    persists = False

    def __init__(
        self,
        directory: Path,
        options: TraceOptions,
        *,
        redact: bool = False,
        queue_size: int = 1024,
        counters: Counter[str] | None = None,
        references: References = _no_references,
    ) -> None:
        self.directory = directory
        self.options = options
        self.redact = redact
        self.references = references
        self.counters: Counter[str] = counters if counters is not None else Counter()
        # Present from the start, so a scrape shows zero drops rather than no series at all.
        for name in ("traces_written_total", "traces_dropped_total", "traces_failed_total"):
            self.counters[name] += 0
        self._send, self._receive = anyio.create_memory_object_stream[_Job](queue_size)
        directory.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def observer() -> RunTrace:
        return RunTrace()

    def statistics(self) -> TraceStatistics:
        c = self.counters
        return TraceStatistics(c["traces_written_total"], c["traces_dropped_total"], c["traces_failed_total"])

    async def before_terminal(self, prepared: Prepared, log_: EventLog) -> None:
        return None

    async def after_run(self, prepared: Prepared, outcome: Outcome) -> None:
        await self.finish(prepared, outcome.log, outcome.cause, references=await self.references(prepared))

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
        history = list(prepared.history)
        header: dict[str, Any] = {
            "kind": "trace",
            "version": TRACE_VERSION,
            "response_id": run.opened.response_id,
            "created_at": run.opened.created_at,
            "stream": bool(prepared.request.stream),
            "redacted": self.redact,
            "options": msgspec.to_builtins(self.options),
            "request": redact_request(request) if self.redact else request,
            "history": redact(history, under_text_key=True) if self.redact else history,
            "references": (redact(references, under_text_key=True) if self.redact else references) or {},
        }
        if prepared.protocol != "responses":
            # The request is a stand-in there: the conversation is what the run was built from.
            conversation = msgspec.to_builtins(prepared.conversation)
            header["protocol"] = prepared.protocol
            header["conversation"] = (
                redact(conversation, under_text_key=True) if self.redact else conversation
            )
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
        data = encode_trace(
            job.header, job.trace.engine, job.trace.wire, job.final, job.cause, redacted=job.redact
        )
        tmp = job.path.with_suffix(".jsonl.part")
        tmp.write_bytes(data)
        # Renamed into place whole, so a reader never sees half a trace.
        tmp.replace(job.path)
