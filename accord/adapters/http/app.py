"""The ASGI application: routing, auth, error mapping (SPEC H1, I11)."""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack

import structlog

import accord
from accord.adapters.http.context import Context, Handler
from accord.adapters.http.exchange import Exchange, Receive, Scope, Send, error_body
from accord.adapters.http.websocket import serve_websocket
from accord.adapters.metrics import Metrics
from accord.adapters.runner import Lifecycle
from accord.adapters.service import Service
from accord.errors import NotFound, RequestError

log = structlog.get_logger("accord.http")

Route = tuple[str, re.Pattern[str], Handler]
#: A route as the composition root lists it: method, path pattern, handler.
RouteSpec = tuple[str, str, Handler]
Lifespan = Callable[[], AbstractAsyncContextManager[None]]

_OPEN_PATHS = frozenset({"/health", "/ready", "/version"})


async def _health(ctx: Context, ex: Exchange) -> None:
    await ex.json(200, {"status": "draining" if ctx.runner.lifecycle.draining else "ok"})


async def _ready(ctx: Context, ex: Exchange) -> None:
    """Readiness, unlike /health's liveness: 503 while draining or while no upstream can serve."""
    readiness = getattr(ctx.service.engine, "readiness", None)
    report = await readiness() if readiness is not None else {"ready": True}
    ready = bool(report.get("ready")) and not ctx.runner.lifecycle.draining
    await ex.json(
        200 if ready else 503, {**report, "ready": ready, "status": "ready" if ready else "not_ready"}
    )


async def _version(ctx: Context, ex: Exchange) -> None:
    await ex.json(200, {"version": accord.__version__})


async def _metrics(ctx: Context, ex: Exchange) -> None:
    await ex.raw(200, ctx.runner.metrics.render().encode(), b"text/plain; version=0.0.4")


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
    ) -> None:
        self.context = context
        self.api_key = api_key
        #: Entered at startup and left at shutdown, in reverse order (pools, long-lived tasks).
        self.lifespans = tuple(lifespans)
        builtin: list[RouteSpec] = [
            ("GET", r"/v1/models", _models),
            ("GET", r"/v1/models/(?P<id>.+?)", _model),
            ("GET", r"/health", _health),
            ("GET", r"/ready", _ready),
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
        ex = Exchange(scope, receive, send)
        try:
            if not self._authorised(ex):
                raise RequestError("invalid or missing API key", status=401, code="invalid_api_key")
            handler, match = self._route(ex)
            ex.match = match
            await handler(self.context, ex)
        except RequestError as exc:
            if not ex.started:
                await ex.error(exc)
            self.metrics.request(_route_name(ex.path), exc.status, "rejected")
        except Exception as exc:
            log.exception("unhandled error", path=ex.path)
            if not ex.started:
                await ex.json(
                    500,
                    error_body(type(exc).__name__, type="server_error", param=None, code="internal_error"),
                )
            self.metrics.request(_route_name(ex.path), 500, "internal_error")

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


def _route_name(path: str) -> str:
    return (
        path.strip("/").split("/")[1] if path.startswith("/v1/") and path.count("/") >= 2 else path.strip("/")
    )
