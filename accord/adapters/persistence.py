"""Writing finished responses into the store: a run hook, and the retention sweep.

When a response is written: just before its terminal event goes out (the run driver's
``before_terminal``), in one transaction, so a client that has seen the end can continue
from any process at once and a crash leaves the response absent, never half-written. A
response that ends without a terminal event (its client went away, W10) is written
afterwards (``after_run``), closed as ``cancelled``: OpenAI keeps such responses too, and
the items generated so far stay available to a continuation. ``store: false`` is never
written.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import anyio
import structlog

from accord.adapters.runner import Outcome
from accord.adapters.service import Prepared
from accord.adapters.store import ResponseStore, conversation_items, make_record
from accord.events.response import Cancelled, Failed, ResponseEvent, fold
from accord.events.wire import EventLog

log = structlog.get_logger("accord.store")

#: The longest pause between two retention sweeps.
MAX_SWEEP_INTERVAL_S = 60.0


class StoreWriter:
    """The run hook that stores responses, and the sweep that expires them."""

    persists = True

    def __init__(self, store: ResponseStore, ttl: float | None, *, max_bytes: int | None = None) -> None:
        self.store = store
        self.ttl = ttl if ttl is not None and ttl > 0 else None
        #: The size cap: past it the oldest finished responses are evicted (None: no cap).
        self.max_bytes = max_bytes if max_bytes is not None and max_bytes > 0 else None
        self._written: set[str] = set()

    async def _write(
        self, prepared: Prepared, events: Sequence[ResponseEvent], keepalives: Sequence[int]
    ) -> None:
        snapshot = fold(list(events))
        record = make_record(
            request=prepared.request,
            events=events,
            keepalive_seqs=keepalives,
            status=snapshot.status,
            ttl=self.ttl,
        )
        await self.store.save(record, conversation_items(prepared.conversation.input_items, snapshot))

    async def before_terminal(self, prepared: Prepared, log_: EventLog) -> None:
        if prepared.request.store is False:
            return
        await self._write(prepared, log_.events, prepared.run.keepalive_seqs)
        self._written.add(prepared.run.opened.response_id)

    async def after_run(self, prepared: Prepared, outcome: Outcome) -> None:
        response_id = prepared.run.opened.response_id
        if response_id in self._written:
            self._written.discard(response_id)
            return
        log_ = outcome.log
        if prepared.request.store is False or not log_.events:
            return
        events: list[ResponseEvent] = list(log_.events)
        if not log_.terminated:
            # The live log stays as it was (others read it); the stored copy is closed.
            if outcome.cause == "client_disconnected":
                events.append(Cancelled())
            else:
                events.append(Failed(code="internal_error", message="the response ended without finishing"))
        await self._write(prepared, events, prepared.run.keepalive_seqs)

    async def sweep_forever(self) -> None:
        interval = min(MAX_SWEEP_INTERVAL_S, max(0.5, self.ttl / 2)) if self.ttl else MAX_SWEEP_INTERVAL_S
        while True:
            try:
                removed = await self.store.sweep(time.time()) if self.ttl is not None else 0
                evicted = await self.store.evict(self.max_bytes) if self.max_bytes is not None else 0
                if removed or evicted:
                    log.info("store sweep", removed=removed, evicted=evicted)
            except Exception:
                log.exception("store sweep failed")
            await anyio.sleep(interval)

    @asynccontextmanager
    async def lifetime(self) -> AsyncIterator[None]:
        """For the app's lifespan: the sweep while serving, and the store closed at the end."""
        try:
            async with anyio.create_task_group() as group:
                if self.ttl is not None or self.max_bytes is not None:
                    group.start_soon(self.sweep_forever)
                yield
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.store.aclose()
