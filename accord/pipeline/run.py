"""One response, end to end: engine -> parse -> items -> log -> egress.

Theory of operation. Three tasks share one task group:

* the **producer** pulls the engine's output and runs the sans-IO chain on it
  (ParseStage -> ItemTracker -> EventLog.append, which folds the Snapshot and projects
  wire events); each engine event becomes one batch of wire events in the channel;
* the **keepalive** posts a marker into the same channel when it has been silent;
* the **egress** (this coroutine) takes batches in order, checks them with the
  TerminalGuard, stamps them with the Sequencer and hands them to ``emit``.

The sans-IO stages are composed in-process rather than each behind its own memory
stream: the chain is pure and synchronous, and a hop per stage would cost more than the
work itself (see the pipeline benchmark). Async boundaries stay where time passes: the
engine and the client.

Any exception below the egress becomes ``error`` + ``response.failed`` in the log and
on the wire (SPEC W6): engine exceptions as ``engine_error``, our own as
``internal_error``, naming only the exception type. The producer catches its own
failures, so nothing it already put in the channel is ever lost.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Protocol

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from accord.engine.protocol import Engine, GenerationRequest
from accord.errors import GenerationError, ProtocolViolation
from accord.events.generation import EngineFailed, GenerationOutput
from accord.events.response import Failed, Opened
from accord.events.wire import EventLog, WireEvent
from accord.pipeline.guard import TerminalGuard
from accord.pipeline.items import ItemTracker
from accord.pipeline.keepalive import EgressItem, Keepalive
from accord.pipeline.parse import ParseStage
from accord.pipeline.sequencer import Sequencer

log = structlog.get_logger("accord.run")

Emit = Callable[[list[WireEvent]], Awaitable[None]]


class RunObserver(Protocol):
    """Sees everything a response run does (traces, metrics). Must not block."""

    def on_engine(self, event: GenerationOutput) -> None: ...

    def on_wire(self, event: WireEvent) -> None: ...


@dataclass
class ResponseRun:
    engine: Engine
    request: GenerationRequest
    opened: Opened
    parse: ParseStage
    tracker: ItemTracker
    keepalive_interval: float = 10.0
    observers: list[RunObserver] = field(default_factory=list)
    log: EventLog = field(default_factory=EventLog)
    keepalives_sent: int = 0
    #: Sequence numbers the keepalives took, so a stored stream replays with the same numbering.
    keepalive_seqs: list[int] = field(default_factory=list)
    #: Set when the engine produced its first event (time to first token).
    first_engine_event_at: float | None = None
    guard: TerminalGuard = field(default_factory=TerminalGuard)
    sequencer: Sequencer = field(default_factory=Sequencer)

    async def egress(self, batch: list[WireEvent], emit: Emit) -> None:
        """Check, stamp and hand over one batch: the single egress of the response."""
        stamped = [self.sequencer.stamp(self.guard.check(event)) for event in batch]
        for observer in self.observers:
            for event in stamped:
                observer.on_wire(event)
        await emit(stamped)

    async def end_early(self, code: str, message: str, emit: Emit) -> None:
        """After the run was cancelled (shutdown): close the response as failed, on the wire too."""
        if not self.log.terminated:
            await self.egress(self.log.append(Failed(code=code, message=message)), emit)

    async def run(self, emit: Emit) -> EventLog:
        """Run to the terminal event, calling ``emit`` with each batch of stamped wire events.

        Cancelling the caller's scope (client gone) stops the engine at once; the log
        is then left without a terminal event.
        """
        guard = self.guard
        keepalive = Keepalive(self.keepalive_interval)

        async def egress(batch: list[WireEvent]) -> None:
            await self.egress(batch, emit)
            keepalive.touch()

        # SPEC W9: created + in_progress go out before the engine is even asked.
        await egress(self.log.append(self.opened))
        send, receive = anyio.create_memory_object_stream[EgressItem](64)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._produce, send.clone(), keepalive)
            tg.start_soon(keepalive.run, send.clone())
            send.close()
            async with receive:
                async for first in receive:
                    # Take whatever else is already waiting, so a fast engine costs one
                    # emit per burst rather than one per chunk.
                    out: list[WireEvent] = []
                    for batch in _drain(first, receive):
                        if batch is not None:
                            out.extend(batch)
                        elif not guard.terminated:
                            seq = self.sequencer.next + len(out)
                            # Every number not a keepalive's went to a projected event.
                            projected_sent = seq - len(self.keepalive_seqs)
                            if self.log.terminated and projected_sent == self.log.projected[-1]:
                                continue  # the terminal event is already in this burst
                            self.keepalives_sent += 1
                            self.keepalive_seqs.append(seq)
                            out.append(self.log.keepalive(projected_sent))
                    if out:
                        await egress(out)
        return self.log

    async def _produce(self, send: MemoryObjectSendStream[EgressItem], keepalive: Keepalive) -> None:
        async with send:
            try:
                async with aclosing(self._engine_events()) as events:
                    async for event in events:
                        if self.first_engine_event_at is None:
                            self.first_engine_event_at = anyio.current_time()
                        for observer in self.observers:
                            observer.on_engine(event)
                        batch = self._chain(event)
                        if batch:
                            try:
                                send.send_nowait(batch)
                            except anyio.WouldBlock:
                                await send.send(batch)
            except anyio.BrokenResourceError:
                # The consumer has left: the run was cancelled (the client went away) while this
                # task was between two awaits, so its cancellation had not reached it yet. That
                # is a stop, not a failure: nothing is appended and nobody is left to tell.
                return
            except Exception as exc:  # the one place every failure becomes a terminal event
                log.exception("response run failed", response_id=self.opened.response_id)
                if not self.log.terminated:
                    await send.send(self.log.append(Failed(code=_code_of(exc), message=exception_name(exc))))
            finally:
                keepalive.stop()

    async def _engine_events(self) -> AsyncGenerator[GenerationOutput, None]:
        try:
            async with aclosing(self.engine.generate(self.request)) as stream:
                async for event in stream:
                    yield event
        except Exception as exc:
            raise _EngineRaised(exc) from exc

    def _chain(self, event: GenerationOutput) -> list[WireEvent]:
        wire: list[WireEvent] = []
        for segment in self.parse.feed(event):
            for response_event in self.tracker.feed(segment):
                wire.extend(self.log.append(response_event))
        if isinstance(event, EngineFailed) and not self.log.terminated:
            raise ProtocolViolation("engine failure did not end the response")
        return wire


def _drain(first: EgressItem, receive: MemoryObjectReceiveStream[EgressItem]) -> list[EgressItem]:
    items = [first]
    while True:
        try:
            items.append(receive.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream):
            return items


class _EngineRaised(GenerationError):
    def __init__(self, cause: Exception) -> None:
        super().__init__(type(cause).__name__)
        self.cause = cause


def _code_of(exc: Exception) -> str:
    return "engine_error" if isinstance(exc, _EngineRaised) else "internal_error"


def exception_name(exc: BaseException) -> str:
    return type(exc.cause).__name__ if isinstance(exc, _EngineRaised) else type(exc).__name__
