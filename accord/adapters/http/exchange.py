"""One HTTP exchange over raw ASGI: body reading with a limit, JSON and SSE replies.

Timeouts. A body must arrive within ``body_timeout`` seconds of the request (a slow body is
cut off with 408). Every write must be taken by the transport within the ``write_budget()``
seconds it allows at that moment: hypercorn's ``send`` waits while the client's socket is
full, so a client that stopped reading would otherwise hold its stream, and the server's
shutdown, forever. A write that runs out of budget counts as the client having gone: the
exchange says so (``wait_disconnect`` returns), nothing more is written, and the run is
recorded as ``client_disconnected`` and stopped, which frees its place in the engine.

hypercorn's trio server shields its socket writes from cancellation, so there a timeout
around ``send`` would never fire. On trio each write therefore runs in a task of the
exchange's own ``writes`` group and the exchange waits for it within the budget; a write
that never completes is left behind in that task (it ends when the socket closes) while
the run goes on to its end.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

import anyio
import msgspec
from anyio.abc import TaskGroup

from accord.adapters.http.safety import is_json
from accord.errors import RequestError, cap
from accord.events.wire import WireEvent

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_json = msgspec.json.Encoder()
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


_TAGS: dict[type[WireEvent], bytes] = {}


def _tag(event: WireEvent) -> bytes:
    kind = type(event)
    tag = _TAGS.get(kind)
    if tag is None:
        tag = _TAGS[kind] = str(kind.__struct_config__.tag).encode()
    return tag


def sse_frame(event: WireEvent) -> bytes:
    """``event: <type>\\ndata: <json>\\n\\n`` (SPEC W11)."""
    return b"event: " + _tag(event) + b"\ndata: " + _json.encode(event) + b"\n\n"


#: SPEC I11: an error body is at most this many bytes, whatever the message echoes.
MAX_ERROR_BYTES = 4096
_MAX_PARAM_BYTES = 512


def _fit(text: str, budget: int) -> str:
    """``text`` shortened until its JSON encoding takes at most ``budget`` bytes.

    Characters count for up to six bytes each once encoded (a control character becomes
    ``\u0001``), so the cut is made on the encoded size, not on the length.
    """
    size = len(_json.encode(text))
    while size > budget:
        keep = max(0, len(text) * (budget - 40) // size)
        text = text[:keep] + "… (truncated)"
        size = len(_json.encode(text))
        if keep == 0:
            break
    return text


def error_body(message: str, *, type: str, param: str | None, code: str | None) -> dict[str, Any]:
    param = _fit(param, _MAX_PARAM_BYTES) if param is not None else None
    code = _fit(code, 128) if code is not None else None
    rest = len(_json.encode({"error": {"message": "", "type": type, "param": param, "code": code}}))
    return {
        "error": {
            "message": _fit(cap(message), MAX_ERROR_BYTES - rest),
            "type": type,
            "param": param,
            "code": code,
        }
    }


class Exchange:
    def __init__(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        *,
        body_timeout: float | None = None,
        write_budget: Callable[[], float | None] = lambda: None,
        writes: TaskGroup | None = None,
    ) -> None:
        self.scope, self.receive, self._send = scope, receive, send
        self.body_timeout = body_timeout
        self.write_budget = write_budget
        self._gone = anyio.Event()
        self._writes = writes
        self.method: str = scope.get("method", "GET")
        self.path: str = scope.get("path", "/")
        self.headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        self.query = {k: v[-1] for k, v in parse_qs(scope.get("query_string", b"").decode("latin-1")).items()}
        self.status = 0
        self.started = False
        self.disconnected = False
        #: The route's match (path parameters).
        self.match: re.Match[str] | None = None
        #: The matched route's label (metrics, logs); None when no route matched the path.
        self.route: str | None = None
        #: The run driver answers this exchange and logs its line (set by ``Context.drive``).
        self.driven = False

    async def send(self, message: Message) -> None:
        """Hand one message to the server, within the write budget; past it, the client is gone."""
        if self._gone.is_set():
            return
        budget = self.write_budget()
        with anyio.move_on_after(budget if budget is not None else math.inf) as scope:
            if self._writes is None:
                await self._send(message)
            else:
                await self._send_in_task(self._writes, message)
        if scope.cancelled_caught:
            self.disconnected = True
            self._gone.set()

    async def _send_in_task(self, writes: TaskGroup, message: Message) -> None:
        done = anyio.Event()
        failure: list[BaseException] = []

        async def write() -> None:
            try:
                await self._send(message)
            except Exception as exc:
                failure.append(exc)
            finally:
                done.set()

        writes.start_soon(write)
        await done.wait()
        if failure:
            raise failure[0]

    async def read_body(self, limit: int) -> bytes | bytearray:
        timeout = self.body_timeout if self.body_timeout is not None else math.inf
        with anyio.move_on_after(timeout):
            return await self._read_body(limit)
        raise RequestError(
            f"the request body did not arrive within {self.body_timeout:g} s",
            status=408,
            code="request_timeout",
        )

    async def _read_body(self, limit: int) -> bytes | bytearray:
        if not is_json(self.headers.get("content-type", "")):
            # A page can post text/plain without a CORS preflight; JSON it cannot (safety.py).
            raise RequestError(
                "The request body must be sent as Content-Type: application/json.",
                param="Content-Type",
                status=415,
                code="unsupported_media_type",
            )
        declared = self.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise RequestError(
                f"request body is larger than {limit} bytes", status=413, code="request_too_large"
            )
        # One buffer, sized from Content-Length where given: no list of chunks joined into a
        # second copy (a 30 MB body must not cost 60 MB). A bytearray is what is returned; every
        # reader of a body (msgspec, json) takes it as it takes bytes.
        body = bytearray()
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True
                raise RequestError("client disconnected while sending the body", status=400)
            body += message.get("body", b"")
            if len(body) > limit:
                raise RequestError(
                    f"request body is larger than {limit} bytes", status=413, code="request_too_large"
                )
            if not message.get("more_body", False):
                return body

    async def json(self, status: int, payload: Any, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        body = _json.encode(payload)
        await self.raw(status, body, b"application/json", headers)

    async def raw(
        self, status: int, body: bytes, content_type: bytes, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        self.status, self.started = status, True
        await self.send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
                + (headers or []),
            }
        )
        await self.send({"type": "http.response.body", "body": body, "more_body": False})

    async def error(self, exc: RequestError) -> None:
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in exc.headers]
        await self.json(
            exc.status, error_body(exc.message, type=exc.type, param=exc.param, code=exc.code), headers
        )

    async def start_sse(self) -> None:
        self.status, self.started = 200, True
        await self.send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})

    async def send_body(self, body: bytes, *, more: bool = True) -> None:
        """Part of a streamed body (after ``start_sse``); ``more=False`` ends it."""
        await self.send({"type": "http.response.body", "body": body, "more_body": more})

    async def sse(self, events: list[WireEvent]) -> None:
        await self.send_body(b"".join(map(sse_frame, events)))

    async def end_sse(self) -> None:
        await self.send_body(b"", more=False)

    async def wait_disconnect(self) -> None:
        """Returns when the client has gone away or stopped reading (after the body was read)."""
        async with anyio.create_task_group() as group:

            async def receive_until_gone() -> None:
                while True:
                    message = await self.receive()
                    if message["type"] == "http.disconnect":
                        self.disconnected = True
                        self._gone.set()
                        return

            group.start_soon(receive_until_gone)
            await self._gone.wait()
            group.cancel_scope.cancel()
