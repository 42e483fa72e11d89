"""The ASGI application: routing, auth, error mapping (SPEC H1, I11)."""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack

import structlog

import accord
from accord.adapters.http.context import Context, Handler
from accord.adapters.http.cors import Cors
from accord.adapters.http.exchange import Exchange, Receive, Scope, Send, error_body
from accord.adapters.http.health import health, ready
from accord.adapters.http.websocket import serve_websocket
from accord.adapters.metrics import CONTENT_TYPE, Metrics
from accord.adapters.runner import Lifecycle
from accord.adapters.service import Service
from accord.errors import NotFound, RequestError

log = structlog.get_logger("accord.http")
access = structlog.get_logger("accord.access")

Route = tuple[str, re.Pattern[str], Handler]
#: A route as the composition root lists it: method, path pattern, handler.
RouteSpec = tuple[str, str, Handler]
Lifespan = Callable[[], AbstractAsyncContextManager[None]]

_OPEN_PATHS = frozenset({"/health", "/ready", "/version"})


async def _version(ctx: Context, ex: Exchange) -> None:
    await ex.json(200, {"version": accord.__version__})


async def _metrics(ctx: Context, ex: Exchange) -> None:
    await ex.raw(200, ctx.runner.metrics.render(), CONTENT_TYPE.encode())


async def _models(ctx: Context, ex: Exchange) -> None:
    names = await ctx.model_names()
    await ex.json(
        200,
        {
            "object": "list",
            "data": [{"id": n, "object": "model", "created": 0, "owned_by": "accord"} for n in names],
        },
    )


async def _model(ctx: Context, ex: Exchange) -> None:
    assert ex.match is not None
    name = ex.match["id"]
    if name not in await ctx.model_names():
        raise NotFound(f"no model {name!r}", param="model")
    await ex.json(200, {"id": name, "object": "model", "created": 0, "owned_by": "accord"})


class AccordApp:
    """The ASGI callable: auth, routing to ``handler(ctx, ex)``, error mapping, the lifespan.

    Everything it serves is given to its constructor by the composition root; nothing is
    attached afterwards.
    """

    def __init__(
        self,
        context: Context,
        routes: Sequence[RouteSpec],
        *,
        api_key: str | None = None,
        lifespans: Sequence[Lifespan] = (),
        cors: Cors | None = None,
    ) -> None:
        self.context = context
        self.api_key = api_key
        self.cors = cors
        #: Entered at startup and left at shutdown, in reverse order (pools, long-lived tasks).
        self.lifespans = tuple(lifespans)
        builtin: list[RouteSpec] = [
            ("GET", r"/v1/models", _models),
            ("GET", r"/v1/models/(?P<id>.+?)", _model),
            ("GET", r"/health", health),
            ("GET", r"/ready", ready),
            ("GET", r"/version", _version),
            ("GET", r"/metrics", _metrics),
            ("GET", r"/openapi\.json", self._openapi),
        ]
        self.routes: tuple[Route, ...] = tuple(
            (method, re.compile(pattern + r"/?"), handler) for method, pattern, handler in [*routes, *builtin]
        )

    @property
    def service(self) -> Service:
        return self.context.service

    @property
    def metrics(self) -> Metrics:
        return self.context.runner.metrics

    @property
    def lifecycle(self) -> Lifecycle:
        return self.context.runner.lifecycle

    async def _openapi(self, ctx: Context, ex: Exchange) -> None:
        from accord.adapters.http.openapi import openapi_document

        routes = [
            (method, pattern.pattern.removesuffix("/?"), handler.__name__.strip("_"))
            for method, pattern, handler in self.routes
        ]
        await ex.json(200, openapi_document(routes))

    def _authorised(self, ex: Exchange) -> bool:
        key = self.api_key
        if not key or ex.path in _OPEN_PATHS:
            return True
        header = ex.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        return hmac.compare_digest(
            token.strip().encode() if scheme.lower() == "bearer" else b"", key.encode()
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "websocket":
            ws = Exchange(scope, receive, send)
            await serve_websocket(self.context, scope, receive, send, authorised=self._authorised(ws))
            return
        if scope["type"] != "http":
            return
        if self.cors is not None:
            if (preflight := self.cors.preflight(scope)) is not None:
                await send({"type": "http.response.start", "status": 204, "headers": preflight})
                await send({"type": "http.response.body", "body": b""})
                return
            send = self.cors.wrap(scope, send)
        began = time.perf_counter()
        ex = Exchange(scope, receive, send)
        try:
            await self._serve(ex)
        finally:
            access_line(ex, began)

    async def _serve(self, ex: Exchange) -> None:
        # The metrics label: the name of the route that matched, never the raw path (SPEC H1).
        route = route_name(ex.path, self.routes)
        try:
            if not self._authorised(ex):
                raise RequestError("invalid or missing API key", status=401, code="invalid_api_key")
            handler, match = self._route(ex)
            ex.match = match
            await handler(self.context, ex)
        except RequestError as exc:
            if not ex.started:
                await ex.error(exc)
            self.metrics.request(route, exc.status, "rejected")
        except Exception as exc:
            log.exception("unhandled error", path=ex.path)
            if not ex.started:
                await ex.json(
                    500,
                    error_body(type(exc).__name__, type="server_error", param=None, code="internal_error"),
                )
            self.metrics.request(route, 500, "internal_error")

    def _route(self, ex: Exchange) -> tuple[Handler, re.Match[str]]:
        allowed: list[str] = []
        for method, pattern, handler in self.routes:
            match = pattern.fullmatch(ex.path)
            if match is None:
                continue
            if method == ex.method:
                return handler, match
            allowed.append(method)
        if allowed:
            raise RequestError(
                f"method {ex.method} not allowed on {ex.path}", status=405, code="method_not_allowed"
            )
        raise NotFound(f"no route for {ex.method} {ex.path}")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        async with AsyncExitStack() as stack:
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    try:
                        for hook in self.lifespans:
                            await stack.enter_async_context(hook())
                    except Exception as exc:
                        log.exception("startup failed")
                        await send({"type": "lifespan.startup.failed", "message": type(exc).__name__})
                        return
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    break
        await send({"type": "lifespan.shutdown.complete"})


def access_line(ex: Exchange, began: float) -> None:
    """One log line per request, rejected ones included (SPEC H2)."""
    path = ex.path if len(ex.path) <= 200 else ex.path[:200] + "…"
    access.info(
        "request",
        method=ex.method[:16],
        # Non-printable characters would let a path forge lines in a terminal log.
        path=path if path.isprintable() else ascii(path),
        status=ex.status,
        ms=round((time.perf_counter() - began) * 1000, 1),
    )


#: The metrics label of a request no route matched.
UNMATCHED = "unmatched"


def route_name(path: str, routes: Sequence[Route]) -> str:
    """The label of the first route whose pattern matches ``path``: its pattern's first segment
    after ``/v1/`` (``responses``, ``models``) or its whole name (``health``); a bounded set."""
    for _, pattern, _ in routes:
        if pattern.fullmatch(path):
            text = pattern.pattern.removesuffix("/?").replace("\\", "")
            parts = text.strip("/").split("/")
            return parts[1] if parts[0] == "v1" and len(parts) > 1 else parts[0]
    return UNMATCHED
