"""``background: true`` (SPEC S4): responses that run without holding a connection.

Theory of operation. A background response is driven by the same run driver as any
other, in a task group that belongs to the app's lifetime rather than to one exchange.
Its framing, :class:`LiveRun`, keeps the stamped wire events; a client streaming it (the
POST itself with ``stream: true``, or ``GET ?stream=true`` later) follows that list from
any sequence number, and leaving does not stop the run. The store holds a row for it from
the start (its log is the queued opening, so its fold says ``queued``), so every process
can poll it; its final state is written before its terminal event is published, like any
response. A cancel reaches the run directly in this process, and through a flag in the
store from any other (the run looks at it twice a second).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
import structlog
from anyio.abc import TaskGroup

from accord.adapters.http.admission import Ticket
from accord.adapters.http.exchange import Exchange
from accord.adapters.runner import Outcome, Runner, Stop
from accord.adapters.service import Prepared
from accord.adapters.store import ResponseStore, conversation_items, make_record
from accord.errors import RequestError
from accord.events.response import Opened, Snapshot, fold
from accord.events.wire import WireEvent
from accord.pipeline.run import ResponseRun

log = structlog.get_logger("accord.store")

CANCEL_POLL_S = 0.5


def queued(opened: Opened) -> Opened:
    """The opening a background response is stored with until its run ends."""
    return msgspec.structs.replace(opened, queued=True)


class LiveRun:
    """One background response running in this process: its framing, and what it has sent so far."""

    streaming = True
    status = 200

    def __init__(self, prepared: Prepared) -> None:
        self.prepared = prepared
        self.events: list[WireEvent] = []
        self.done = anyio.Event()
        self.stopped = anyio.Event()
        self.reason = Stop.CANCELLED
        self._changed = anyio.Event()

    @property
    def response_id(self) -> str:
        return self.prepared.run.opened.response_id

    # -- the Framing the run driver sends to ------------------------------------------
    async def open(self, run: ResponseRun) -> None:
        return None

    async def send(self, events: list[WireEvent]) -> None:
        self.events.extend(events)
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def close(self, outcome: Outcome) -> None:
        self.done.set()
        self._changed.set()

    # -- stopping and reading ---------------------------------------------------------
    def stop(self, reason: Stop) -> None:
        if not self.stopped.is_set():
            self.reason = reason
            self.stopped.set()

    async def until_stopped(self) -> Stop:
        await self.stopped.wait()
        return self.reason

    def body(self) -> dict[str, Any]:
        log_ = self.prepared.run.log
        return log_.snapshot.body() if log_.events else fold([queued(self.prepared.run.opened)]).body()

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

    def __init__(self, store: ResponseStore, runner: Runner, ttl: float | None) -> None:
        self.store = store
        self.runner = runner
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
                    live.stop(Stop.SHUTDOWN)

    async def start(self, ex: Exchange, prepared: Prepared, *, ticket: Ticket | None = None) -> None:
        """Start ``prepared`` in the background; ``ticket`` (admission) is given back when it ends."""
        try:
            await self._start(ex, prepared, ticket)
        except BaseException:
            if ticket is not None and prepared.run.opened.response_id not in self.live:
                ticket.release()
            raise

    async def _start(self, ex: Exchange, prepared: Prepared, ticket: Ticket | None) -> None:
        request = prepared.request
        if request.store is False:
            raise RequestError("Background responses must be stored; 'store' cannot be false.", param="store")
        if self._group is None:
            raise RequestError(
                "background responses are not being accepted now", status=503, type="server_error"
            )
        live = LiveRun(prepared)
        items = conversation_items(prepared.conversation.input_items, Snapshot())
        opening = queued(prepared.run.opened)
        record = make_record(
            request=request, events=[opening], keepalive_seqs=(), status="queued", ttl=self.ttl
        )
        await self.store.save(record, items)
        self.live[live.response_id] = live
        self._group.start_soon(self._run, live, ticket)
        if request.stream:
            await stream_live(ex, live, -1)
        else:
            await ex.json(200, fold([opening]).body())

    async def _run(self, live: LiveRun, ticket: Ticket | None = None) -> None:
        async def cancel_requested() -> Stop:
            while True:
                await anyio.sleep(CANCEL_POLL_S)
                try:
                    if await self.store.cancel_requested(live.response_id):
                        return Stop.CANCELLED
                except Exception:
                    log.exception("cancel poll failed")

        try:
            await self.runner.drive(live.prepared, live, watchers=[live.until_stopped, cancel_requested])
        except Exception:
            log.exception("background response failed")
        finally:
            live.done.set()
            self.live.pop(live.response_id, None)
            if ticket is not None:
                ticket.release()


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
