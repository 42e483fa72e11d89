"""The ASGI application: routing, auth, error mapping (SPEC H1, I11)."""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack

import anyio
import sniffio
import structlog
from anyio.abc import TaskGroup

import accord
from accord.adapters.http.context import Context, Handler
from accord.adapters.http.cors import Cors
from accord.adapters.http.exchange import Exchange, Receive, Scope, Send, error_body
from accord.adapters.http.health import health, ready
from accord.adapters.http.messages import PREFIX as MESSAGES_PREFIX
from accord.adapters.http.messages import anthropic_error
from accord.adapters.http.paging import path_part
from accord.adapters.http.safety import RequestGuard
from accord.adapters.http.websocket import serve_websocket
from accord.adapters.metrics import CONTENT_TYPE, Metrics
from accord.adapters.runner import Lifecycle
from accord.adapters.service import Service
from accord.errors import NotFound, RequestError
from accord.events.messages_wire import error_body as messages_error_body

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
    name = path_part(ex)
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
        guard: RequestGuard | None = None,
    ) -> None:
        self.context = context
        self.api_key = api_key
        self.cors = cors
        #: Host and Origin checks (DNS rebinding, cross-site requests); None: none.
        self.guard = guard
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
        self._labels = {pattern.pattern: _route_label(pattern.pattern) for _, pattern, _ in self.routes}

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
        if scheme.lower() != "bearer":
            # Anthropic's clients send the key as ``x-api-key``.
            token = ex.headers.get("x-api-key", "")
        return hmac.compare_digest(token.strip().encode(), key.encode())

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
        if sniffio.current_async_library() == "trio":
            # hypercorn's trio writes cannot be cancelled: each runs in a task (see exchange.py).
            async with anyio.create_task_group() as writes:
                await self._serve(scope, receive, send, writes)
        else:
            await self._serve(scope, receive, send, None)

    async def _serve(self, scope: Scope, receive: Receive, send: Send, writes: TaskGroup | None) -> None:
        ctx = self.context
        ex = Exchange(
            scope, receive, send, body_timeout=ctx.body_timeout, write_budget=ctx.write_budget, writes=writes
        )
        started = time.perf_counter()
        cause = "ok"
        try:
            if self.guard is not None:
                self.guard.check(ex.headers)
            if not self._authorised(ex):
                refused = RequestError("invalid or missing API key", status=401, code="invalid_api_key")
                refused.headers = (("www-authenticate", 'Bearer realm="accord"'),)
                raise refused
            handler, match = self._route(ex)
            ex.match = match
            await handler(self.context, ex)
        except RequestError as exc:
            cause = "rejected"
            if not ex.started and ex.path.startswith(MESSAGES_PREFIX):
                await ex.json(*anthropic_error(exc))
            elif not ex.started:
                await ex.error(exc)
            # Metrics are labelled by the matched route only: a path is the client's to choose,
            # and would be a label (and a series) of the client's choosing.
            self.metrics.request(ex.route or UNMATCHED, exc.status, "rejected")
        except Exception as exc:
            cause = "internal_error"
            log.exception("unhandled error", route=ex.route)
            if not ex.started and ex.path.startswith(MESSAGES_PREFIX):
                await ex.json(500, messages_error_body(type(exc).__name__, status=500))
            elif not ex.started:
                await ex.json(
                    500,
                    error_body(type(exc).__name__, type="server_error", param=None, code="internal_error"),
                )
            self.metrics.request(ex.route or UNMATCHED, 500, "internal_error")
        finally:
            if not ex.driven:
                # A request whose run the driver took (``Context.drive``, any protocol) is logged
                # by the driver's ``response`` line; every other request logs this one.
                access.info(
                    "request",
                    method=ex.method[:16],
                    route=ex.route,
                    # Non-printable characters would let a path forge lines in a terminal log.
                    path=_printable(ex.path[:200]),
                    status=ex.status,
                    cause=cause,
                    duration_s=round(time.perf_counter() - started, 4),
                )

    def _route(self, ex: Exchange) -> tuple[Handler, re.Match[str]]:
        allowed: list[str] = []
        for method, pattern, handler in self.routes:
            match = pattern.fullmatch(ex.path)
            if match is None:
                continue
            ex.route = self._labels[pattern.pattern]
            if method == ex.method:
                return handler, match
            allowed.append(method)
        if allowed:
            refused = RequestError(
                f"method {ex.method} not allowed on {ex.path}", status=405, code="method_not_allowed"
            )
            refused.headers = (("allow", ", ".join(sorted(set(allowed)))),)
            raise refused
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


#: The metrics label of a request no route matched.
UNMATCHED = "unmatched"


def _route_label(pattern: str) -> str:
    """The metrics label of a route: its first fixed path segment after ``/v1/`` (``responses``)."""
    parts = [p for p in pattern.removesuffix("/?").split("/") if p]
    if parts and parts[0] == "v1" and len(parts) > 1:
        parts = parts[1:]
    return re.sub(r"[^a-z0-9_]", "", parts[0].replace("\\.", "_")) if parts else "root"


def _printable(path: str) -> str:
    return path if path.isprintable() else ascii(path)
