"""The ASGI application: routing, auth, error mapping (SPEC H1, I11)."""

from __future__ import annotations

import hmac
import re
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack

import anyio
import structlog

import accord
from accord.adapters.http.exchange import Exchange, Receive, Scope, Send, error_body
from accord.adapters.http.metrics import Metrics
from accord.adapters.http.responses import create_response
from accord.adapters.service import Prepared, Service
from accord.config import Settings
from accord.errors import RequestError
from accord.events.wire import EventLog

log = structlog.get_logger("accord.http")

Handler = Callable[["AccordApp", Exchange], Awaitable[None]]
Route = tuple[str, re.Pattern[str], Handler]
FinishHook = Callable[[Prepared, EventLog, str], Awaitable[None]]
TerminalHook = Callable[[Prepared, EventLog], Awaitable[None]]
BackgroundStarter = Callable[["AccordApp", Exchange, Prepared], Awaitable[None]]

_OPEN_PATHS = frozenset({"/health", "/ready", "/version"})


async def _health(app: AccordApp, ex: Exchange) -> None:
    await ex.json(200, {"status": "draining" if app.draining else "ok"})


async def _ready(app: AccordApp, ex: Exchange) -> None:
    """Readiness, unlike /health's liveness: 503 while draining or while no upstream can serve."""
    readiness = getattr(app.service.engine, "readiness", None)
    report = await readiness() if readiness is not None else {"ready": True}
    ready = bool(report.get("ready")) and not app.draining
    await ex.json(
        200 if ready else 503, {**report, "ready": ready, "status": "ready" if ready else "not_ready"}
    )


async def _version(app: AccordApp, ex: Exchange) -> None:
    await ex.json(200, {"version": accord.__version__})


async def _metrics(app: AccordApp, ex: Exchange) -> None:
    await ex.raw(200, app.metrics.render().encode(), b"text/plain; version=0.0.4")


async def _models(app: AccordApp, ex: Exchange) -> None:
    names = await app.model_names()
    await ex.json(
        200,
        {
            "object": "list",
            "data": [{"id": n, "object": "model", "created": 0, "owned_by": "accord"} for n in names],
        },
    )


async def _openapi(app: AccordApp, ex: Exchange) -> None:
    from accord.adapters.http.openapi import openapi_document

    routes = [
        (method, pattern.pattern.removesuffix("/?"), handler.__name__.strip("_"))
        for method, pattern, handler in app.routes
    ]
    await ex.json(200, openapi_document(routes))


class AccordApp:
    def __init__(self, settings: Settings, service: Service) -> None:
        self.settings = settings
        self.service = service
        self.metrics = Metrics()
        self.draining = False
        #: Set when in-flight streams must end now (graceful shutdown ran out of time).
        self.shutdown_deadline = LazyEvent()
        #: Set whenever no stream is open (the drain waits on it).
        self._idle = LazyEvent()
        self.finish_hooks: list[FinishHook] = []
        #: Awaited just before a response's terminal event goes out, so that what they record
        #: (the store) is visible to every reader the moment a client has seen the end.
        self.terminal_hooks: list[TerminalHook] = []
        #: Entered at startup and left at shutdown, in reverse order (pools, long-lived tasks).
        self.lifespan_hooks: list[Callable[[], AbstractAsyncContextManager[None]]] = []
        #: Runs ``background: true`` requests; None where nothing can hold them (no store).
        self.background: BackgroundStarter | None = None
        self.model_lister: Callable[[], Awaitable[list[str]]] | None = None
        self.routes: list[Route] = []
        self.add_route("POST", r"/v1/responses", create_response)
        self.add_route("GET", r"/v1/models", _models)
        self.add_route("GET", r"/health", _health)
        self.add_route("GET", r"/ready", _ready)
        self.add_route("GET", r"/version", _version)
        self.add_route("GET", r"/metrics", _metrics)
        self.add_route("GET", r"/openapi\.json", _openapi)

    def stream_opened(self) -> None:
        self.metrics.active_streams += 1
        self._idle = LazyEvent()

    def stream_closed(self) -> None:
        self.metrics.active_streams -= 1
        if self.metrics.active_streams == 0:
            self._idle.set()

    async def wait_idle(self) -> None:
        if self.metrics.active_streams > 0:
            await self._idle.wait()

    def add_route(self, method: str, pattern: str, handler: Handler) -> None:
        self.routes.append((method, re.compile(pattern + r"/?"), handler))

    async def model_names(self) -> list[str]:
        if self.model_lister is not None:
            return await self.model_lister()
        return [self.service.engine.model_name]

    async def finish(self, prepared: Prepared, log_: EventLog, cause: str) -> None:
        for hook in self.finish_hooks:
            try:
                await hook(prepared, log_, cause)
            except Exception:
                log.exception("finish hook failed", cause=cause)

    async def before_terminal(self, prepared: Prepared, log_: EventLog) -> None:
        for hook in self.terminal_hooks:
            try:
                await hook(prepared, log_)
            except Exception:
                log.exception("terminal hook failed")

    def _authorised(self, ex: Exchange) -> bool:
        key = self.settings.api_key
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
        if scope["type"] != "http":
            return
        ex = Exchange(scope, receive, send)
        try:
            if not self._authorised(ex):
                raise RequestError("invalid or missing API key", status=401, code="invalid_api_key")
            handler, match = self._route(ex)
            ex.match = match
            await handler(self, ex)
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
        raise RequestError(f"no route for {ex.method} {ex.path}", status=404, code="not_found")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        async with AsyncExitStack() as stack:
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    try:
                        for hook in self.lifespan_hooks:
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


class LazyEvent:
    """An anyio Event made on first use inside the loop (the app is built before the loop runs)."""

    def __init__(self) -> None:
        self._event: anyio.Event | None = None

    def _get(self) -> anyio.Event:
        if self._event is None:
            self._event = anyio.Event()
        return self._event

    def set(self) -> None:
        self._get().set()

    def is_set(self) -> bool:
        return self._get().is_set()

    async def wait(self) -> None:
        await self._get().wait()
