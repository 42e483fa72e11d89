"""The run driver: one response's lifecycle, shared by every way a run is consumed.

A :class:`~accord.pipeline.run.ResponseRun` knows how to turn engine output into stamped
wire events. Everything around it is here, once: the watchers that end a run early (the
client went away, a cancel, the shutdown deadline), the terminal hooks that must finish
before the client sees the end (the store), closing a stopped run with the right terminal
event, the termination cause, the metrics and the one log line per response. SSE, JSON,
background runs, compaction and trace replay all drive their run through
:meth:`Runner.drive`; ``/v1/completions``, which has no response log, uses the same
watchers through :meth:`Runner.watched`.

API
---
``Runner(hooks: Sequence[RunHook], metrics: Metrics, lifecycle: Lifecycle)``

``await runner.drive(prepared, framing, *, watchers=(), route="responses", started=None,
persist=True, trace=True) -> Outcome``
    Runs ``prepared.run`` to its end and hands every stamped batch to ``framing``, in
    order. ``watchers`` are awaited alongside the run; the first to return a :class:`Stop`
    cancels it, and the driver closes the log as that reason says (``CANCELLED``:
    ``response.cancelled``; ``SHUTDOWN``: ``error`` + ``response.failed`` with
    ``server_shutting_down``; ``CLIENT_GONE``/``ABORTED``: nothing more is sent). The
    lifecycle's shutdown deadline is always watched. ``started`` is the
    ``time.perf_counter()`` at which the request arrived (time to first event and token);
    ``persist=False`` skips the hooks that keep the run as a response (``persists``: the store,
    conversation turns) -- a Chat Completions or Messages run is not a stored response;
    ``trace=False`` skips the others (the trace recorder) -- a compaction run is not one at all.

``Framing`` (protocol): how one consumer puts a run on its transport.
    ``streaming: bool`` -- counts as an open stream (the drain waits for it) and measures
    time to first event. ``status: int`` -- the HTTP status it answered with, for the
    metrics and the log line. ``async open(run)`` before the first event;
    ``async send(events)`` once per stamped batch (the run's ``log.snapshot`` is already
    folded up to the last of them, so a projection to another protocol reads its
    done-payloads from there); ``async close(outcome)`` once at the end, shielded, also
    when the run raised (then ``outcome.raised`` is true).

``RunHook`` (protocol): ``async before_terminal(prepared, log)`` just before the batch
holding the terminal event goes out; ``async after_run(prepared, outcome)`` once the run is
over, whatever happened. Hook failures are logged, never raised.

``Outcome``: ``prepared``, ``cause`` (``completed``, ``incomplete``, ``failed:<code>``,
``cancelled``, ``client_disconnected``, ``aborted``), ``stop``, ``raised``; ``log`` and
``snapshot`` read through to the run.

A second wire protocol (Chat Completions, Messages) is a Framing that projects each batch
(or the Snapshot) into its own frames; a WebSocket is a Framing whose ``send`` writes
messages instead of SSE frames and whose watcher is the socket's close.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import anyio
import structlog

from accord.adapters.metrics import Metrics, RunTimer
from accord.adapters.service import Prepared
from accord.events.response import Cancelled, Snapshot
from accord.events.wire import TERMINAL_TYPES, EventLog, WireEvent
from accord.pipeline.run import ResponseRun

log = structlog.get_logger("accord.http")


class Stop(enum.Enum):
    """Why a run was stopped before it ended by itself, and so how its log is closed."""

    #: Nobody is left to send to: the log stays without a terminal event (SPEC W10).
    CLIENT_GONE = "client_disconnected"
    #: A cancel (background responses): closed as ``response.cancelled``.
    CANCELLED = "cancelled"
    #: The shutdown deadline: closed as failed, ``server_shutting_down`` (SPEC H3).
    SHUTDOWN = "server_shutting_down"
    #: Stopped with no reason to record (a replayed trace that was cut short).
    ABORTED = "aborted"


Watcher = Callable[[], Awaitable[Stop]]


def termination_cause(log_: EventLog, stop: Stop | None) -> str:
    """How a response ended, as metrics, logs and traces name it."""
    snapshot = log_.snapshot
    if snapshot.terminal is None:
        return "client_disconnected" if stop is Stop.CLIENT_GONE else "aborted"
    if snapshot.status == "failed" and snapshot.error is not None:
        return f"failed:{snapshot.error['code']}"
    return snapshot.status


@dataclass(frozen=True)
class Outcome:
    prepared: Prepared
    cause: str
    stop: Stop | None
    #: An exception escaped the run (a transport failure); the edge answers it.
    raised: bool = False

    @property
    def log(self) -> EventLog:
        return self.prepared.run.log

    @property
    def snapshot(self) -> Snapshot:
        return self.prepared.run.log.snapshot


class Framing(Protocol):
    @property
    def streaming(self) -> bool: ...

    @property
    def status(self) -> int: ...

    async def open(self, run: ResponseRun) -> None: ...

    async def send(self, events: list[WireEvent]) -> None: ...

    async def close(self, outcome: Outcome) -> None: ...


class RunHook(Protocol):
    #: Whether the hook keeps the run as a stored response (the store, conversations), or only
    #: records it (traces); ``Runner.drive``'s ``persist`` and ``trace`` choose by it.
    persists: bool

    async def before_terminal(self, prepared: Prepared, log_: EventLog) -> None: ...

    async def after_run(self, prepared: Prepared, outcome: Outcome) -> None: ...


class LazyEvent:
    """An anyio Event made on first use inside the loop (the app is built before the loop runs)."""

    def __init__(self) -> None:
        self._event: anyio.Event | None = None

    def _get(self) -> anyio.Event:
        if self._event is None:
            self._event = anyio.Event()
        return self._event

    def set(self) -> None:
        self._get().set()

    def is_set(self) -> bool:
        return self._get().is_set()

    async def wait(self) -> None:
        await self._get().wait()


class Lifecycle:
    """The server's state as runs see it: draining, the shutdown deadline, open streams."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.draining = False
        #: Set when in-flight streams must end now (graceful shutdown ran out of time).
        self.shutdown_deadline = LazyEvent()
        #: Set whenever no stream is open (the drain waits on it).
        self._idle = LazyEvent()

    def stream_opened(self) -> None:
        self.metrics.active_streams += 1
        self._idle = LazyEvent()

    def stream_closed(self) -> None:
        self.metrics.active_streams -= 1
        if self.metrics.active_streams == 0:
            self._idle.set()

    async def wait_idle(self) -> None:
        if self.metrics.active_streams > 0:
            await self._idle.wait()

    async def until_shutdown(self) -> Stop:
        await self.shutdown_deadline.wait()
        return Stop.SHUTDOWN


class Runner:
    def __init__(self, hooks: Sequence[RunHook], metrics: Metrics, lifecycle: Lifecycle) -> None:
        self.hooks = tuple(hooks)
        self.metrics = metrics
        self.lifecycle = lifecycle

    async def watched(
        self, body: Callable[[], Awaitable[object]], watchers: Sequence[Watcher]
    ) -> Stop | None:
        """Run ``body`` until it returns or a watcher (or the shutdown deadline) stops it."""
        stop: Stop | None = None
        async with anyio.create_task_group() as group:

            async def watch(watcher: Watcher) -> None:
                nonlocal stop
                reason = await watcher()
                if stop is None:
                    stop = reason
                group.cancel_scope.cancel()

            for watcher in (*watchers, self.lifecycle.until_shutdown):
                group.start_soon(watch, watcher)
            await body()
            group.cancel_scope.cancel()
        return stop

    async def drive(
        self,
        prepared: Prepared,
        framing: Framing,
        *,
        watchers: Sequence[Watcher] = (),
        route: str = "responses",
        started: float | None = None,
        persist: bool = True,
        trace: bool = True,
    ) -> Outcome:
        run = prepared.run
        started = time.perf_counter() if started is None else started
        # The run stamps its first engine event on the event loop's clock; measure TTFT on the same one.
        loop_started = anyio.current_time() - (time.perf_counter() - started)
        hooks = tuple(h for h in self.hooks if (persist if h.persists else trace))
        response_id = run.opened.response_id
        timer = self.metrics.timer(route, started)

        async def emit(events: list[WireEvent]) -> None:
            if events and isinstance(events[-1], TERMINAL_TYPES):
                # What the hooks record (the store) is visible the moment a client has seen the end.
                with anyio.CancelScope(shield=True):
                    for hook in hooks:
                        try:
                            await hook.before_terminal(prepared, run.log)
                        except Exception:
                            log.exception("terminal hook failed")
            timer.event(framing.streaming)
            await framing.send(events)

        async def body() -> None:
            await run.run(emit)

        structlog.contextvars.bind_contextvars(response_id=response_id)
        if framing.streaming:
            self.lifecycle.stream_opened()
        stop: Stop | None = None
        raised = True
        try:
            await framing.open(run)
            stop = await self.watched(body, watchers)
            if not run.log.terminated and run.log.events:
                with anyio.CancelScope(shield=True):
                    if stop is Stop.SHUTDOWN:
                        await run.end_early("server_shutting_down", "the server is shutting down", emit)
                    elif stop is Stop.CANCELLED:
                        await run.egress(run.log.append(Cancelled()), emit)
            raised = False
        finally:
            outcome = Outcome(prepared, termination_cause(run.log, stop), stop, raised)
            with anyio.CancelScope(shield=True):
                try:
                    await framing.close(outcome)
                finally:
                    if framing.streaming:
                        self.lifecycle.stream_closed()
                    self._account(outcome, framing, route, loop_started, timer)
                    for hook in hooks:
                        try:
                            await hook.after_run(prepared, outcome)
                        except Exception:
                            log.exception("finish hook failed", cause=outcome.cause)
                    self._log(outcome, framing, started, loop_started)
                    structlog.contextvars.unbind_contextvars("response_id")
        return outcome

    def _account(
        self, outcome: Outcome, framing: Framing, route: str, loop_started: float, timer: RunTimer
    ) -> None:
        run, metrics = outcome.prepared.run, self.metrics
        usage = run.log.snapshot.usage
        if usage is not None:
            metrics.count_usage(
                usage.input_tokens,
                usage.input_tokens_details.cached_tokens,
                usage.output_tokens,
                usage.output_tokens_details.reasoning_tokens,
            )
        metrics.keepalives += run.keepalives_sent
        first = run.first_engine_event_at
        timer.finish(outcome.cause, None if first is None else first - loop_started)
        metrics.request(route, framing.status, outcome.cause)

    def _log(self, outcome: Outcome, framing: Framing, started: float, loop_started: float) -> None:
        run = outcome.prepared.run
        usage = run.log.snapshot.usage
        ttft = run.first_engine_event_at
        log.info(
            "response",
            response_id=run.opened.response_id,
            status=framing.status,
            cause=outcome.cause,
            stream=framing.streaming,
            background=bool(outcome.prepared.request.background),
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
            cached_tokens=usage.input_tokens_details.cached_tokens if usage else None,
            reasoning_tokens=usage.output_tokens_details.reasoning_tokens if usage else None,
            keepalives=run.keepalives_sent,
            duration_s=round(time.perf_counter() - started, 4),
            ttft_s=round(ttft - loop_started, 4) if ttft else None,
        )


class Collected:
    """A Framing that keeps every stamped event: compaction, trace replay, tests."""

    streaming = False

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.events: list[WireEvent] = []

    async def open(self, run: ResponseRun) -> None:
        return None

    async def send(self, events: list[WireEvent]) -> None:
        self.events.extend(events)

    async def close(self, outcome: Outcome) -> None:
        return None
