"""Test helper: a real hypercorn server on loopback, in a thread with its own event loop."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx

from accord.adapters.build import build_app
from accord.adapters.http.app import AccordApp
from accord.adapters.http.serve import serve_app
from accord.config import Settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, app: AccordApp, base_url: str, stop: threading.Event) -> None:
        self.app = app
        self.base_url = base_url
        self.stop = stop

    @property
    def v1(self) -> str:
        return self.base_url + "/v1"


@contextmanager
def running(settings: Settings, app: AccordApp | None = None) -> Iterator[Server]:
    """Serve ``settings`` (or a prepared app) until the block ends; yields the server."""
    port = free_port()
    settings = settings.model_copy(update={"port": port, "host": "127.0.0.1"})
    if app is None:
        app = build_app(settings)
    stop = threading.Event()
    ready = threading.Event()
    errors: list[BaseException] = []

    async def until_stopped() -> None:
        # The stop signal comes from another thread, so it is polled rather than awaited.
        while not stop.is_set():  # noqa: ASYNC110
            await anyio.sleep(0.02)

    def target() -> None:
        try:
            anyio.run(
                lambda: serve_app(
                    app,
                    "127.0.0.1",
                    port,
                    grace=settings.shutdown_grace,
                    shutdown=until_stopped,
                    on_ready=ready.set,
                ),
                backend=settings.worker_class,
            )
        except BaseException as exc:  # surfaced to the test below
            errors.append(exc)
            ready.set()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    ready.wait(10)
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            httpx.get(base + "/health", timeout=1.0)
            break
        except httpx.TransportError:
            if errors:
                raise errors[0] from None
            threading.Event().wait(0.02)
    try:
        yield Server(app, base, stop)
    finally:
        stop.set()
        thread.join(30)
        if errors:
            raise errors[0]


async def read_gaps(
    client: httpx.AsyncClient, gaps: list[float], on_event: Callable[[], object] | None = None
) -> int:
    """Stream one response to ``{"input": "go"}``, appending the time between consecutive SSE events
    to ``gaps`` as the client sees them (``on_event`` after each); returns how many events came."""
    count = 0
    last = None
    async with client.stream("POST", "/v1/responses", json={"input": "go", "stream": True}) as resp:
        async for line in resp.aiter_lines():
            if not line.startswith("data: "):
                continue
            now = time.perf_counter()
            if last is not None:
                gaps.append(now - last)
            last = now
            count += 1
            if on_event is not None:
                on_event()
    return count


def write_script(tmp: Path, rules: list[dict[str, Any]]) -> Path:
    path = tmp / "rules.json"
    path.write_text(json.dumps({"rules": rules}))
    return path


def scripted_settings(script: Path, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "engine": "scripted",
        "script": script,
        "keepalive_interval": 10.0,
        "data_dir": script.parent / "data",
        "shutdown_grace": 1.0,
        "reasoning_parser": "none",
        "tool_parser": "none",
    }
    values.update(extra)
    return Settings(**values)


def parse_sse(raw: bytes) -> list[dict[str, Any]]:
    """Events of a raw SSE body, checking the framing (SPEC W11) on the way."""
    events = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        lines = block.split("\n")
        assert lines[0].startswith("event: "), block
        assert lines[1].startswith("data: "), block
        data = json.loads(lines[1][len("data: ") :])
        assert data["type"] == lines[0][len("event: ") :]
        events.append(data)
    return events
