"""Serving test upstreams on loopback and driving engines against them."""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing, contextmanager
from typing import Any

import anyio
import httpx
from hypercorn.asyncio import serve
from hypercorn.config import Config

from accord.engine.protocol import Engine, GenerationRequest
from accord.events.generation import Chunk, EngineFailed, Finished, GenerationOutput
from tests.serving import free_port


class Served:
    """An ASGI app served by hypercorn in a thread of its own; can stop and start on its port."""

    def __init__(self, app: Any, port: int | None = None) -> None:
        self.app = app
        self.port = port or free_port()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Served:
        self._stop.clear()
        config = Config()
        config.bind = [f"127.0.0.1:{self.port}"]
        config.accesslog = None
        config.errorlog = None
        config.graceful_timeout = 0.2

        async def until_stopped() -> None:
            # A threading.Event from the test thread: polled, as no anyio primitive crosses threads.
            while not self._stop.is_set():  # noqa: ASYNC110
                await anyio.sleep(0.01)

        async def main() -> None:
            await serve(self.app, config, shutdown_trigger=until_stopped)

        self._thread = threading.Thread(target=lambda: anyio.run(main), daemon=True)
        self._thread.start()
        for _ in range(500):
            try:
                httpx.get(self.url + "/health", timeout=1.0)
                return self
            except httpx.TransportError:
                threading.Event().wait(0.01)
        raise RuntimeError("test upstream did not start")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None


@contextmanager
def serving(*apps: Any) -> Iterator[list[Served]]:
    served = [Served(app).start() for app in apps]
    try:
        yield served
    finally:
        for s in served:
            s.stop()


class Outcome:
    """What an engine produced for one request, gathered."""

    def __init__(self, events: list[GenerationOutput]) -> None:
        self.events = events
        self.text = "".join(e.text for e in events if isinstance(e, Chunk))
        self.token_ids = [t for e in events if isinstance(e, Chunk) for t in e.token_ids]
        last = events[-1] if events else None
        self.finished = last if isinstance(last, Finished) else None
        self.failed = last if isinstance(last, EngineFailed) else None
        assert sum(isinstance(e, (Finished, EngineFailed)) for e in events) == 1, events


async def collect(engine: Engine, request: GenerationRequest) -> Outcome:
    events: list[GenerationOutput] = []
    stream: AsyncGenerator[GenerationOutput, None] = engine.generate(request)
    async with aclosing(stream):
        async for event in stream:
            events.append(event)
    return Outcome(events)


def run(backend: str, fn: Any, *args: Any) -> Any:
    return anyio.run(fn, *args, backend=backend)


def wait_until(predicate: Any, timeout: float = 5.0) -> bool:
    deadline = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return True
        deadline.wait(0.01)
    return bool(predicate())
