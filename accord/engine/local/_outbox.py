"""Handing one request's events from the engine thread to the task that streams them.

The engine thread never waits on an event loop: it appends to the outbox and, when the consuming task is
parked, schedules that task's wake-up on the task's own loop (``call_soon_threadsafe`` under asyncio,
``run_sync_soon`` under trio), which returns at once. So it works the same under asyncio and trio and
with any number of loops, and a delivery costs the loop one callback: no worker thread is woken per
token (each such wake-up was a thread switch, on a machine whose cores the kernels are using).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from functools import partial

import anyio
import sniffio

from accord.events.generation import GenerationOutput

Wake = Callable[[], object]


def loop_caller() -> Callable[[Wake], object]:
    """A function that runs a callback on the calling task's event loop, from any thread, without
    waiting for it. Call it from inside the loop."""
    if sniffio.current_async_library() == "trio":
        import trio

        return trio.lowlevel.current_trio_token().run_sync_soon
    return asyncio.get_running_loop().call_soon_threadsafe


class Outbox:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: deque[GenerationOutput] = deque()
        self._wake: Wake | None = None
        self._released = False
        self._call_soon: Callable[[Wake], object] | None = None

    def put(self, items: list[GenerationOutput]) -> None:
        if not items:
            return
        with self._lock:
            self._items.extend(items)
            wake, self._wake = self._wake, None
        _call(wake)

    def take(self, wake: Wake | None = None) -> list[GenerationOutput]:
        """Everything put so far. When there is nothing, ``wake`` (if given) is called, once, on the
        next ``put`` or ``release``; it replaces a wake-up given before."""
        return self._take(wake)[0]

    def _take(self, wake: Wake | None) -> tuple[list[GenerationOutput], bool]:
        """:meth:`take`, and whether the outbox was released, read under the same lock: every put
        before the release is then among the items."""
        with self._lock:
            items = list(self._items)
            self._items.clear()
            if not items and not self._released:
                self._wake = wake
            return items, self._released

    async def next_items(self) -> list[GenerationOutput]:
        """What was put since the last call, parking the calling task until there is something; empty
        only once the outbox is released with nothing left. For the one task that consumes it."""
        if self._call_soon is None:
            self._call_soon = loop_caller()
        while True:
            arrived = anyio.Event()
            items, released = self._take(partial(self._call_soon, arrived.set))
            if items or released:
                return items
            await arrived.wait()

    def release(self) -> None:
        """The engine holds nothing more for this request (called from the engine thread)."""
        with self._lock:
            self._released = True
            wake, self._wake = self._wake, None
        _call(wake)

    @property
    def released(self) -> bool:
        return self._released


def _call(wake: Wake | None) -> None:
    if wake is None:
        return
    try:
        wake()
    except RuntimeError:  # the consumer's loop has ended (trio's RunFinishedError is one too)
        pass
