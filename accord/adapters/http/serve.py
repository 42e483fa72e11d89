"""Serving the app with hypercorn on asyncio or trio, with graceful shutdown (SPEC H3).

On SIGINT/SIGTERM the server stops taking new responses (503, ``/health`` says
``draining``), gives in-flight streams ``shutdown_grace`` seconds to finish, then ends
the rest with ``error`` + ``response.failed`` (``server_shutting_down``) and a clean end
of body, and finally lets hypercorn close.
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable

import anyio
import structlog
from hypercorn.config import Config

from accord.adapters.http.app import AccordApp

log = structlog.get_logger("accord.serve")


def hypercorn_config(host: str, port: int, *, grace: float) -> Config:
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = grace + 5.0
    config.keep_alive_timeout = 75.0
    return config


async def drain(app: AccordApp, grace: float) -> None:
    """Stop taking work; wait for streams up to ``grace`` seconds; then end the rest."""
    lifecycle = app.lifecycle
    lifecycle.draining = True
    with anyio.move_on_after(grace):
        await lifecycle.wait_idle()
    lifecycle.shutdown_deadline.set()
    with anyio.move_on_after(5.0):
        await lifecycle.wait_idle()


async def _wait_signal() -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("shutting down", signal=signal.Signals(signum).name)
            return


async def serve_app(
    app: AccordApp,
    host: str,
    port: int,
    *,
    grace: float,
    shutdown: Callable[[], Awaitable[None]] | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Serve until a signal (or ``shutdown`` returns); runs in the current anyio backend."""
    import sniffio

    config = hypercorn_config(host, port, grace=grace)
    trigger = shutdown or _wait_signal

    async def shutdown_trigger() -> None:
        await trigger()
        await drain(app, grace)

    backend = sniffio.current_async_library()
    if on_ready is not None:
        on_ready()
    if backend == "trio":
        from hypercorn.trio import serve as trio_serve

        await trio_serve(app, config, shutdown_trigger=shutdown_trigger)  # type: ignore[arg-type]
    else:
        from hypercorn.asyncio import serve as asyncio_serve

        await asyncio_serve(app, config, shutdown_trigger=shutdown_trigger)  # type: ignore[arg-type]
