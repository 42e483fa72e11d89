"""Serving the app with hypercorn on asyncio or trio, with graceful shutdown (SPEC H3).

On SIGINT/SIGTERM the server stops taking new responses (503, ``/health`` says
``draining``), gives in-flight streams ``shutdown_grace`` seconds to finish, then ends
the rest with ``error`` + ``response.failed`` (``server_shutting_down``) and a clean end
of body, and finally lets hypercorn close.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import structlog
from hypercorn.config import Config

from accord.adapters.http.app import AccordApp
from accord.adapters.http.storms import StormFilter, install
from accord.errors import BindError

log = structlog.get_logger("accord.serve")

#: After the drain and hypercorn's own wait, how much longer a signalled server waits to exit.
EXIT_MARGIN_S = 0.2


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything says the server is up.

    Raises :class:`BindError` (one line: the address and the reason) when the port is taken
    or the address cannot be used.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=1024)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise BindError(f"cannot listen on {host}:{port}: {reason}") from None


def hypercorn_config(
    host: str,
    port: int,
    *,
    grace: float,
    listener: socket.socket | None = None,
    certfile: Path | None = None,
    keyfile: Path | None = None,
) -> Config:
    config = Config()
    # hypercorn takes over a socket given as fd://N; it is detached here so it is closed once.
    config.bind = [f"fd://{listener.detach()}"] if listener is not None else [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None
    # The drain has already given streams their grace and ended the rest, whose last writes
    # have a short budget (context.SHUTDOWN_WRITE_S); hypercorn's own wait is only for the
    # connections to close after that, so SIGTERM exits within the grace plus about 2 s.
    config.graceful_timeout = 0.5
    config.keep_alive_timeout = 75.0
    if certfile is not None and keyfile is not None:
        config.certfile, config.keyfile = str(certfile), str(keyfile)
    return config


async def drain(app: AccordApp, grace: float) -> None:
    """Stop taking work; wait for streams up to ``grace`` seconds; then end the rest."""
    lifecycle = app.lifecycle
    lifecycle.draining = True
    with anyio.move_on_after(grace):
        await lifecycle.wait_idle()
    lifecycle.shutdown_deadline.set()
    with anyio.move_on_after(1.0):
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
    listener: socket.socket | None = None,
    certfile: Path | None = None,
    keyfile: Path | None = None,
) -> None:
    """Serve until a signal (or ``shutdown`` returns); runs in the current anyio backend.

    ``listener``: a socket from :func:`listen` (else one is bound here); ``on_ready`` is called
    once it is bound, so whatever it announces is true.
    """
    import sniffio

    listener = listener if listener is not None else listen(host, port)
    config = hypercorn_config(host, port, grace=grace, listener=listener, certfile=certfile, keyfile=keyfile)
    trigger = shutdown or _wait_signal
    drained, finished = anyio.Event(), anyio.Event()

    async def shutdown_trigger() -> None:
        await trigger()
        await drain(app, grace)
        drained.set()

    async def exit_when_stuck() -> None:
        # By now every run has ended and been stored. What can still hold hypercorn is a
        # socket write to a client that never reads (its trio server cannot cancel one), and
        # that would keep the process alive until the client leaves. A signalled server exits.
        await drained.wait()
        with anyio.move_on_after(config.graceful_timeout + EXIT_MARGIN_S):
            await finished.wait()
            return
        log.warning("exiting with connections that do not read still open")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(0)

    backend = sniffio.current_async_library()
    if on_ready is not None:
        on_ready()
    remove_filter = install(StormFilter())
    async with anyio.create_task_group() as group:
        if shutdown is None:
            group.start_soon(exit_when_stuck)
        try:
            if backend == "trio":
                from hypercorn.trio import serve as trio_serve

                await trio_serve(app, config, shutdown_trigger=shutdown_trigger)  # type: ignore[arg-type]
            else:
                from hypercorn.asyncio import serve as asyncio_serve

                await asyncio_serve(app, config, shutdown_trigger=shutdown_trigger)  # type: ignore[arg-type]
        finally:
            finished.set()
            drained.set()
            remove_filter()
