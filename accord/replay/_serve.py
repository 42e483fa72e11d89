"""Serving an ASGI app with hypercorn on a socket we bound ourselves, on whichever anyio backend runs.

Binding the socket here (instead of handing hypercorn a ``host:port``) lets a caller ask for port 0 and
learn the port before the first request -- what tests and ``accord record --listen 0`` need.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable
from typing import Any

import sniffio
from hypercorn.config import Config, Sockets
from hypercorn.utils import wrap_app


def bind_socket(host: str, port: int, *, backlog: int = 128) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.setblocking(False)
    return sock


def quiet_config() -> Config:
    """A config that adds nothing of its own to responses (a transparent proxy must not add headers)."""
    config = Config()
    config.accesslog = None
    config.errorlog = None
    config.include_date_header = False
    config.include_server_header = False
    config.keep_alive_timeout = 75.0
    config.graceful_timeout = 5.0
    return config


async def serve_on_socket(
    app: Any, sock: socket.socket, shutdown: Callable[[], Awaitable[None]], config: Config | None = None
) -> None:
    """Serve ``app`` on ``sock`` until ``shutdown`` returns."""
    config = config or quiet_config()
    sockets = Sockets(secure_sockets=[], insecure_sockets=[sock], quic_sockets=[])
    wrapped = wrap_app(app, config.wsgi_max_body_size, "asgi")
    if sniffio.current_async_library() == "trio":
        from hypercorn.trio.run import worker_serve as trio_serve

        await trio_serve(wrapped, config, sockets=sockets, shutdown_trigger=shutdown)
    else:
        from hypercorn.asyncio.run import worker_serve as asyncio_serve

        await asyncio_serve(wrapped, config, sockets=sockets, shutdown_trigger=shutdown)
