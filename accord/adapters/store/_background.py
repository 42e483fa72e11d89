"""``background: true`` (SPEC S4): responses that run without holding a connection.

Theory of operation. A background response runs the same :class:`ResponseRun` as any
other, in a task group that belongs to the app's lifetime rather than to one exchange.
Its stamped wire events collect in a :class:`LiveRun`; a client streaming it (the POST
itself with ``stream: true``, or ``GET ?stream=true`` later) follows that list from any
sequence number, and leaving does not stop the run. The store holds a row for it from
the start, so every process can poll it; its final state is written before its terminal
event is published, like any response. A cancel reaches the run directly in this process,
and through a flag in the store from any other (the run looks at it twice a second).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import structlog
from anyio.abc import TaskGroup

from accord.adapters.http.exchange import Exchange
from accord.adapters.http.responses import termination_cause
from accord.adapters.service import Prepared
from accord.adapters.store._protocol import ResponseStore
from accord.adapters.store._records import conversation_items, make_record
from accord.errors import RequestError
from accord.events.response import Cancelled, Snapshot, fold
from accord.events.wire import TERMINAL_TYPES, WireEvent

if TYPE_CHECKING:
    from accord.adapters.http.app import AccordApp

log = structlog.get_logger("accord.store")

CANCEL_POLL_S = 0.5


def queued_body(prepared: Prepared) -> dict[str, Any]:
    """The Response object of a background response that has not started yet."""
    body = fold([prepared.run.opened]).body()
    body["status"] = "queued"
    return body


class LiveRun:
    """One background response running in this process, and what it has sent so far."""

    def __init__(self, prepared: Prepared) -> None:
        self.prepared = prepared
        self.events: list[WireEvent] = []
        self.done = anyio.Event()
        self.cancel = anyio.Event()
        #: Set when the server ends the run (shutdown) rather than a client.
        self.shutdown = False
        self._changed = anyio.Event()

    @property
    def response_id(self) -> str:
        return self.prepared.run.opened.response_id

    def publish(self, events: list[WireEvent]) -> None:
        self.events.extend(events)
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def finish(self) -> None:
        self.done.set()
        self._changed.set()

    def body(self) -> dict[str, Any]:
        log_ = self.prepared.run.log
        return log_.snapshot.body() if log_.events else queued_body(self.prepared)

    async def follow(self, starting_after: int) -> AsyncIterator[list[WireEvent]]:
        """Batches of events after ``starting_after``, as they come, until the run ends."""
        # Sequence numbers are list positions: the egress numbers every event it publishes.
        index = max(0, starting_after + 1)
        while True:
            if index < len(self.events):
                batch = self.events[index:]
                index = len(self.events)
                yield batch
                continue
            if self.done.is_set():
                return
            await self._changed.wait()


class BackgroundRuns:
    """The background responses of one app: started, followed, cancelled, ended at shutdown."""

    def __init__(self, store: ResponseStore, ttl: float | None) -> None:
        self.store = store
        self.ttl = ttl
        self.live: dict[str, LiveRun] = {}
        self._group: TaskGroup | None = None

    @asynccontextmanager
    async def lifetime(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                # Shutdown reached us with runs still going: end them as failed
                # (server_shutting_down); each is stored before the group lets go.
                for live in list(self.live.values()):
                    live.shutdown = True
                    live.cancel.set()

    async def start(self, app: AccordApp, ex: Exchange, prepared: Prepared) -> None:
        request = prepared.request
        if request.store is False:
            raise RequestError("Background responses must be stored; 'store' cannot be false.", param="store")
        if self._group is None:
            raise RequestError(
                "background responses are not being accepted now", status=503, type="server_error"
            )
        live = LiveRun(prepared)
        items = conversation_items(prepared.conversation.input_items, Snapshot())
        record = make_record(
            request=request, events=[prepared.run.opened], keepalive_seqs=(), status="queued", ttl=self.ttl
        )
        await self.store.save(record, items)
        self.live[live.response_id] = live
        app.stream_opened()
        self._group.start_soon(self._run, app, live)
        if request.stream:
            await stream_live(ex, live, -1)
        else:
            await ex.json(200, queued_body(prepared))

    async def _run(self, app: AccordApp, live: LiveRun) -> None:
        prepared = live.prepared
        run = prepared.run
        structlog.contextvars.bind_contextvars(response_id=live.response_id)

        async def emit(events: list[WireEvent]) -> None:
            if events and isinstance(events[-1], TERMINAL_TYPES):
                with anyio.CancelScope(shield=True):
                    await app.before_terminal(prepared, run.log)
            live.publish(events)

        try:
            async with anyio.create_task_group() as group:

                async def stop_on(event: anyio.Event) -> None:
                    await event.wait()
                    group.cancel_scope.cancel()

                async def poll_store() -> None:
                    while not live.cancel.is_set():
                        await anyio.sleep(CANCEL_POLL_S)
                        try:
                            if await self.store.cancel_requested(live.response_id):
                                live.cancel.set()
                        except Exception:
                            log.exception("cancel poll failed")

                async def watch_shutdown() -> None:
                    await app.shutdown_deadline.wait()
                    live.shutdown = True
                    group.cancel_scope.cancel()

                group.start_soon(stop_on, live.cancel)
                group.start_soon(poll_store)
                group.start_soon(watch_shutdown)
                await run.run(emit)
                group.cancel_scope.cancel()
            with anyio.CancelScope(shield=True):
                if not run.log.terminated and run.log.events:
                    if live.shutdown:
                        await run.end_early("server_shutting_down", "the server is shutting down", emit)
                    else:
                        await run.egress(run.log.append(Cancelled()), emit)
        except Exception:
            log.exception("background response failed")
        finally:
            live.finish()
            self.live.pop(live.response_id, None)
            app.stream_closed()
            cause = termination_cause(run.log, disconnected=False)
            with anyio.CancelScope(shield=True):
                await app.finish(prepared, run.log, cause)
            usage = run.log.snapshot.usage
            log.info(
                "response",
                response_id=live.response_id,
                background=True,
                cause=cause,
                input_tokens=usage.input_tokens if usage else None,
                output_tokens=usage.output_tokens if usage else None,
                keepalives=run.keepalives_sent,
            )
            structlog.contextvars.unbind_contextvars("response_id")


async def stream_live(ex: Exchange, live: LiveRun, starting_after: int) -> None:
    """Stream a running background response to this client until it ends or the client leaves."""
    await ex.start_sse()
    async with anyio.create_task_group() as group:

        async def leave_on_disconnect() -> None:
            await ex.wait_disconnect()
            group.cancel_scope.cancel()

        group.start_soon(leave_on_disconnect)
        async for batch in live.follow(starting_after):
            await ex.sse(batch)
        group.cancel_scope.cancel()
    if not ex.disconnected:
        with anyio.CancelScope(shield=True):
            await ex.end_sse()


async def wait_final(store: ResponseStore, response_id: str, patience: float) -> None:
    """Poll the store until another process has finished ``response_id`` (or time is up)."""
    with anyio.move_on_after(patience):
        while True:
            record = await store.get(response_id)
            if record is None or record.final:
                return
            await anyio.sleep(0.1)
