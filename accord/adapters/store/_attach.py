"""The store on the app: which store the settings ask for, and where it hooks in.

When a response is written: just before its terminal event goes out (the app's terminal
hooks), in one transaction, so a client that has seen the end can continue from any
process at once and a crash leaves the response absent, never half-written. A response
that ends without a terminal event (its client went away, W10) is written afterwards by
the finish hook, closed as ``cancelled``: OpenAI keeps such responses too, and the items
generated so far stay available to a continuation. ``store: false`` is never written.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import structlog

from accord.adapters.http.app import AccordApp
from accord.adapters.service import Prepared
from accord.adapters.store._background import BackgroundRuns
from accord.adapters.store._compact import compact, input_tokens
from accord.adapters.store._postgres import PostgresStore
from accord.adapters.store._protocol import ResponseStore
from accord.adapters.store._records import conversation_items, make_record
from accord.adapters.store._routes import StoredRoutes
from accord.adapters.store._sqlite import SQLiteStore
from accord.config import Settings
from accord.events.response import Cancelled, Failed, ResponseEvent, fold
from accord.events.wire import EventLog

log = structlog.get_logger("accord.store")

DB_FILE = "accord.db"
#: The longest pause between two retention sweeps.
MAX_SWEEP_INTERVAL_S = 60.0


class StoreConfigError(ValueError):
    """``--store`` names nothing this server can open."""


def open_store(settings: Settings) -> ResponseStore | None:
    """The store ``--store`` names: ``sqlite:///PATH`` (``sqlite:////abs/path``), ``postgresql://…``,
    or ``none``; by default ``accord.db`` in the data directory."""
    url = settings.store
    if url is None:
        return SQLiteStore(Path(settings.data_dir) / DB_FILE)
    if url.lower() in ("none", "off"):
        return None
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        if not path:
            raise StoreConfigError("--store sqlite:///PATH needs a path")
        return SQLiteStore(Path(path))
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresStore(url)
    raise StoreConfigError(f"--store must be sqlite:///PATH, postgresql://... or none, not {url!r}")


class StoreHooks:
    """Writes finished responses: the terminal hook, the finish hook and retention."""

    def __init__(self, store: ResponseStore, ttl: float | None) -> None:
        self.store = store
        self.ttl = ttl if ttl is not None and ttl > 0 else None
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

    async def on_terminal(self, prepared: Prepared, log_: EventLog) -> None:
        if prepared.request.store is False:
            return
        await self._write(prepared, log_.events, prepared.run.keepalive_seqs)
        self._written.add(prepared.run.opened.response_id)

    async def on_finish(self, prepared: Prepared, log_: EventLog, cause: str) -> None:
        response_id = prepared.run.opened.response_id
        if response_id in self._written:
            self._written.discard(response_id)
            return
        if prepared.request.store is False or not log_.events:
            return
        events: list[ResponseEvent] = list(log_.events)
        if not log_.terminated:
            # The live log stays as it was (others read it); the stored copy is closed.
            if cause == "client_disconnected":
                events.append(Cancelled())
            else:
                events.append(Failed(code="internal_error", message="the response ended without finishing"))
        await self._write(prepared, events, prepared.run.keepalive_seqs)

    async def sweep_forever(self) -> None:
        assert self.ttl is not None
        interval = min(MAX_SWEEP_INTERVAL_S, max(0.5, self.ttl / 2))
        while True:
            try:
                removed = await self.store.sweep(time.time())
                if removed:
                    log.info("store sweep", removed=removed)
            except Exception:
                log.exception("store sweep failed")
            await anyio.sleep(interval)


def attach_store(app: AccordApp, settings: Settings) -> ResponseStore | None:
    """Open the store the settings name and hook it, its routes and background runs into ``app``."""
    app.add_route("POST", r"/v1/responses/input_tokens", input_tokens)
    app.add_route("POST", r"/v1/responses/compact", compact)
    store = open_store(settings)
    if store is None:
        return None
    app.service.store = store
    hooks = StoreHooks(store, settings.store_ttl)
    runs = BackgroundRuns(store, hooks.ttl)
    app.terminal_hooks.append(hooks.on_terminal)
    app.finish_hooks.append(hooks.on_finish)
    app.background = runs.start
    StoredRoutes(store, runs).register(app)

    @asynccontextmanager
    async def lifetime() -> AsyncIterator[None]:
        try:
            async with anyio.create_task_group() as group:
                if hooks.ttl is not None:
                    group.start_soon(hooks.sweep_forever)
                async with runs.lifetime():
                    yield
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await store.aclose()

    app.lifespan_hooks.append(lifetime)
    log.info("store", kind=store.kind, ttl=hooks.ttl)
    return store
