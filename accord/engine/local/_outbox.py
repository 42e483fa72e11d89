"""Handing one request's events from the engine thread to the task that streams them.

The engine thread never waits on an event loop: it appends to the outbox and sets a flag. The consuming
task drains what is there and, when nothing is, waits for the flag in a worker thread
(``anyio.to_thread``), so it works the same under asyncio and trio and with any number of loops.
"""

from __future__ import annotations

import threading
from collections import deque

from accord.events.generation import GenerationOutput


class Outbox:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: deque[GenerationOutput] = deque()
        self._ready = threading.Event()
        self._released = threading.Event()

    def put(self, items: list[GenerationOutput]) -> None:
        if not items:
            return
        with self._lock:
            self._items.extend(items)
            self._ready.set()

    def take(self) -> list[GenerationOutput]:
        with self._lock:
            items = list(self._items)
            self._items.clear()
            self._ready.clear()
            return items

    def wait(self) -> None:
        """Block until something was put (or the request was released)."""
        self._ready.wait()

    def release(self) -> None:
        """The engine holds nothing more for this request (called from the engine thread)."""
        self._released.set()
        self._ready.set()

    @property
    def released(self) -> bool:
        return self._released.is_set()

    def wait_released(self) -> None:
        self._released.wait()
