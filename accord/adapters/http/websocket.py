"""WebSocket mode for ``/v1/responses``: the third framing of a run, after SSE and JSON.

Wire format, as openai-python's ``client.responses.connect()`` (``resources/responses``,
``ResponsesConnection`` and ``types/responses/responses_client_event.py`` /
``responses_server_event.py``) and the Agents SDK's ``ResponsesWebSocketSession``
(``models/openai_responses.py``) speak it, and as Open Responses 2026-04-24 defines it
(``x-openresponses-websocket`` on ``/responses``: ``WebSocketResponseCreateEvent`` in,
streaming events and ``WebSocketErrorEvent`` out):

- The client opens ``ws(s)://<base>/v1/responses`` (the HTTP base URL with its scheme
  swapped and ``/responses`` appended) with the usual ``Authorization: Bearer`` header.
- Client messages are JSON text frames. ``{"type": "response.create", ...}`` carries the
  body of ``POST /v1/responses`` at the top level, plus the WebSocket-only ``stream_id``.
  ``stream`` is implicit: openai-python leaves it out, the Agents SDK sends ``"stream":
  true`` (both accepted; ``false`` is refused). ``background`` is not supported over a
  WebSocket, by OpenAI either. The SDK also knows ``response.steer``; accord refuses it.
- Server messages are JSON text frames, one per event, exactly the events and
  ``sequence_number`` values of the SSE stream for the same request (keepalives included):
  ``response.created`` ... ``response.completed``. An event for a request that named a
  ``stream_id`` carries that ``stream_id``.
- Errors are ``{"type": "error", "status": <http status>, "error": {"type", "code",
  "message", "param"}}`` (``ResponseWsError``; the Agents SDK reads the nested object and
  raises). The error event of a failing stream keeps its ``sequence_number`` and its flat
  ``code``/``message``/``param`` too, and is followed by ``response.failed`` as on SSE. A
  request refused before it ran (a 400 or 404 over HTTP) gets one error event and no
  sequence number. The connection stays open after an error event.

Responses on one connection run one at a time, in the order their ``response.create``
arrived (one FIFO lane, which is what ``stream_id`` promises per lane), so
``previous_response_id`` can name the response before. Closing the connection cancels the
response in flight (the engine stops, and the stored response is ``cancelled``, as for an
SSE client that goes away).

Refused with a close code: a binary frame (1003, unsupported data), a message larger than
the server's body limit (1009), the server shutting down (1001, after the response in
flight has ended as the drain ends SSE streams). Refused before the upgrade, with an HTTP
answer where the server offers one (hypercorn does) and close code 1008 otherwise: a path
other than ``/v1/responses`` (404) and a missing or wrong API key (401).
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import msgspec
import structlog
from anyio.abc import ObjectReceiveStream, ObjectSendStream

from accord.adapters.http.context import Context
from accord.adapters.http.exchange import Receive, Scope, Send, error_body
from accord.adapters.http.framing import failure_status
from accord.adapters.requests import decode_request
from accord.adapters.runner import Outcome, Stop
from accord.errors import RequestError, cap
from accord.events.wire import Error, WireEvent
from accord.pipeline.run import ResponseRun

log = structlog.get_logger("accord.http")

PATH = "/v1/responses"
CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
CLOSE_UNSUPPORTED_DATA = 1003
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009
#: Messages received while a response runs wait here, in order.
QUEUED_MESSAGES = 64

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(dict[str, Any]).decode


def error_message(
    message: str,
    *,
    status: int,
    type: str,
    code: str | None,
    param: str | None = None,
    sequence_number: int | None = None,
    stream_id: str | None = None,
) -> dict[str, Any]:
    """A ``WebSocketErrorEvent``: the HTTP-style status and the nested error object."""
    out: dict[str, Any] = {
        "type": "error",
        "status": status,
        **error_body(message, type=type, param=param, code=code),
    }
    if sequence_number is not None:
        out["sequence_number"] = sequence_number
        # The SSE stream's flat fields, for clients that read an error event as SSE delivers it.
        out.update(code=code, message=cap(message), param=param)
    if stream_id is not None:
        out["stream_id"] = stream_id
    return out


class WebSocketFraming:
    """One response's events as text frames on the connection (a run-driver Framing)."""

    streaming = True
    status = 200

    def __init__(self, connection: Connection, stream_id: str | None) -> None:
        self.connection = connection
        self.stream_id = stream_id

    async def open(self, run: ResponseRun) -> None:
        return None

    async def send(self, events: list[WireEvent]) -> None:
        for event in events:
            await self.connection.send_text(self._frame(event))

    def _frame(self, event: WireEvent) -> bytes:
        if isinstance(event, Error):
            status, kind = failure_status(event.code or "internal_error")
            return _encode(
                error_message(
                    event.message,
                    status=status,
                    type=kind,
                    code=event.code,
                    param=event.param,
                    sequence_number=event.sequence_number,
                    stream_id=self.stream_id,
                )
            )
        frame = _encode(event)
        if self.stream_id is None:
            return frame
        return frame[:-1] + b',"stream_id":' + _encode(self.stream_id) + b"}"

    async def close(self, outcome: Outcome) -> None:
        return None


class Connection:
    """One accepted WebSocket: a reader task queues messages, the session answers them in order."""

    def __init__(self, ctx: Context, send: Send) -> None:
        self.ctx = ctx
        self._send = send
        self.gone = anyio.Event()
        self.closed = False
        self._idle: anyio.CancelScope | None = None

    async def send_text(self, data: bytes) -> None:
        if self.gone.is_set() or self.closed:
            return
        try:
            await self._send({"type": "websocket.send", "text": data.decode()})
        except OSError:
            self.gone.set()

    async def send_json(self, payload: dict[str, Any]) -> None:
        await self.send_text(_encode(payload))

    async def close(self, code: int, reason: str) -> None:
        if self.gone.is_set() or self.closed:
            return
        self.closed = True
        try:
            await self._send({"type": "websocket.close", "code": code, "reason": reason})
        except OSError:
            self.gone.set()

    async def serve(self, receive: Receive) -> None:
        sender, receiver = anyio.create_memory_object_stream[str](QUEUED_MESSAGES)
        async with anyio.create_task_group() as group:
            group.start_soon(self._read, receive, sender)
            group.start_soon(self._close_on_shutdown)
            await self._answer(receiver)
            group.cancel_scope.cancel()

    async def _read(self, receive: Receive, sender: ObjectSendStream[str]) -> None:
        async with sender:
            while True:
                message = await receive()
                kind = message["type"]
                if kind == "websocket.disconnect":
                    self.gone.set()
                    return
                if kind != "websocket.receive":
                    continue
                text = message.get("text")
                if text is None:
                    await self.close(
                        CLOSE_UNSUPPORTED_DATA, "binary frames are not supported; send JSON text"
                    )
                    return
                if len(text) > self.ctx.max_body_bytes:
                    await self.close(CLOSE_TOO_BIG, f"message larger than {self.ctx.max_body_bytes} bytes")
                    return
                await sender.send(text)

    async def _close_on_shutdown(self) -> None:
        await self.ctx.runner.lifecycle.shutdown_deadline.wait()
        if self._idle is not None:
            self._idle.cancel()

    async def _answer(self, receiver: ObjectReceiveStream[str]) -> None:
        lifecycle = self.ctx.runner.lifecycle
        async with receiver:
            while not self.closed and not self.gone.is_set():
                with anyio.CancelScope() as idle:
                    self._idle = idle
                    try:
                        text = await receiver.receive()
                    except anyio.EndOfStream:
                        return
                self._idle = None
                if idle.cancelled_caught or lifecycle.shutdown_deadline.is_set():
                    break
                await self._one(text)
        if lifecycle.shutdown_deadline.is_set():
            await self.close(CLOSE_GOING_AWAY, "server shutting down")

    async def _one(self, text: str) -> None:
        stream_id: str | None = None
        started = time.perf_counter()
        try:
            try:
                message = _decode(text)
            except (msgspec.DecodeError, msgspec.ValidationError):
                raise RequestError("The message is not a JSON object.") from None
            raw_stream_id = message.pop("stream_id", None)
            if raw_stream_id is not None and not isinstance(raw_stream_id, str):
                raise RequestError("'stream_id' must be a string.", param="stream_id")
            stream_id = raw_stream_id
            kind = message.pop("type", None)
            if kind != "response.create":
                raise RequestError(
                    f"Unsupported event type {kind!r}: this server accepts 'response.create'.",
                    param="type",
                    code="unsupported_event_type",
                )
            if message.pop("stream", True) is not True:
                raise RequestError(
                    "'stream' is implicit over a WebSocket; it cannot be false.", param="stream"
                )
            if message.get("background"):
                raise RequestError("'background' is not supported over a WebSocket.", param="background")
            message.pop("stream_options", None)
            request = decode_request(_encode(message), self.ctx.limits)
            self.ctx.refuse_if_draining()
            prepared = await self.ctx.service.prepare(request)
        except RequestError as exc:
            await self.send_json(
                error_message(
                    exc.message,
                    status=exc.status,
                    type=exc.type,
                    code=exc.code,
                    param=exc.param,
                    stream_id=stream_id,
                )
            )
            self.ctx.runner.metrics.request("responses", exc.status, "rejected")
            return
        except Exception as exc:
            log.exception("websocket request failed before it ran")
            await self.send_json(
                error_message(
                    type(exc).__name__,
                    status=500,
                    type="server_error",
                    code="internal_error",
                    stream_id=stream_id,
                )
            )
            return
        await self.ctx.runner.drive(
            prepared, WebSocketFraming(self, stream_id), watchers=[self._watch_gone], started=started
        )

    async def _watch_gone(self) -> Stop:
        await self.gone.wait()
        return Stop.CLIENT_GONE


async def _deny(scope: Scope, send: Send, status: int, message: str, code: str) -> None:
    if "websocket.http.response" in scope.get("extensions", {}):
        body = _encode(error_body(message, type="invalid_request_error", param=None, code=code))
        await send(
            {
                "type": "websocket.http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "websocket.http.response.body", "body": body, "more_body": False})
    else:
        await send({"type": "websocket.close", "code": CLOSE_POLICY, "reason": message[:120]})


async def serve_websocket(
    ctx: Context, scope: Scope, receive: Receive, send: Send, *, authorised: bool
) -> None:
    """Answer one ASGI ``websocket`` scope: the upgrade, then the session until either side closes."""
    first = await receive()
    if first["type"] != "websocket.connect":
        return
    path = str(scope.get("path", "/"))
    if path.rstrip("/") != PATH:
        await _deny(scope, send, 404, f"no WebSocket endpoint at {path}; use {PATH}", "not_found")
        return
    if not authorised:
        await _deny(scope, send, 401, "invalid or missing API key", "invalid_api_key")
        return
    await send({"type": "websocket.accept"})
    connection = Connection(ctx, send)
    try:
        await connection.serve(receive)
    finally:
        with anyio.CancelScope(shield=True):
            if not connection.gone.is_set():
                await connection.close(CLOSE_NORMAL, "")
