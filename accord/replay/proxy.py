"""``accord record``: a transparent recording proxy in front of any Responses, Chat Completions or
Messages server (it forwards every path as it came, so all three are recorded alike).

Theory of operation: each request is forwarded as it came (method, path, query, headers less the
hop-by-hop ones, body) with httpx; the upstream's response bytes are handed to the client chunk by chunk
as they arrive -- ``aiter_raw``, so not even a content-encoding is undone -- and nothing is buffered
beyond the chunk in hand. Only after the last byte has gone out is the exchange written to disk (in a
worker thread), so recording adds no latency to a stream. A client that hangs up cancels the upstream
request, which is how the upstream learns of the disconnect.

Each exchange ``N`` becomes three files in the output directory, all readable by ``accord audit``:
``N.request.body`` (the request bytes), ``N.response.sse`` / ``.json`` / ``.body`` (the response body;
decompressed when the upstream gzip- or deflate-encoded it) and ``N.meta.json`` (status, headers with
credentials redacted, timings, how it ended).
"""

from __future__ import annotations

import re
import signal
import sys
import time
import zlib
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx
import msgspec

from accord.replay._serve import bind_socket, serve_on_socket
from accord.replay.progress import Counter

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: Headers that describe one connection, not the message (RFC 9110 7.6.1); never forwarded.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
#: Request headers whose values never reach the recording.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"})

_encode = msgspec.json.Encoder().encode
_NUMBERED = re.compile(r"^(\d+)\.meta\.json$")


class Exchange(msgspec.Struct, kw_only=True):
    """The metadata of one recorded exchange (``N.meta.json``)."""

    exchange: int
    started_at: str
    method: str
    path: str
    query: str
    upstream: str
    request_headers: list[tuple[str, str]]
    request_file: str
    status: int | None = None
    response_headers: list[tuple[str, str]] = msgspec.field(default_factory=list)
    response_file: str | None = None
    #: Set when the saved body is the decompressed form of what went over the wire.
    decoded_from: str | None = None
    response_bytes: int = 0
    chunks: int = 0
    first_byte_s: float | None = None
    duration_s: float = 0.0
    #: ``complete``, ``client_disconnected`` or ``upstream_error: <what>``.
    outcome: str = "complete"


def _connection_tokens(headers: list[tuple[bytes, bytes]]) -> set[bytes]:
    tokens: set[bytes] = set()
    for name, value in headers:
        if name.lower() == b"connection":
            tokens.update(t.strip().lower() for t in value.split(b","))
    return tokens


def forwardable(
    headers: list[tuple[bytes, bytes]], *, drop: frozenset[bytes] = frozenset()
) -> list[tuple[bytes, bytes]]:
    skip = HOP_BY_HOP | _connection_tokens(headers) | drop
    return [(n, v) for n, v in headers if n.lower() not in skip]


def _text_headers(headers: list[tuple[bytes, bytes]], *, redact: bool) -> list[tuple[str, str]]:
    out = []
    for raw_name, raw_value in headers:
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        out.append((name, "<redacted>" if redact and name in SECRET_HEADERS else value))
    return out


def _body_suffix(content_type: str) -> str:
    if content_type.startswith("text/event-stream"):
        return "sse"
    if "json" in content_type:
        return "json"
    return "body"


class RecordingProxy:
    """The ASGI app: forwards to ``upstream`` and records every exchange into ``out``."""

    def __init__(
        self,
        upstream: str,
        out: Path,
        *,
        client: httpx.AsyncClient | None = None,
        on_saved: Callable[[Exchange], None] | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.out = out
        #: Called with each exchange once it is on disk (embedding code and tests wait on it).
        self.on_saved = on_saved
        self._client = client
        self._own_client = client is None
        out.mkdir(parents=True, exist_ok=True)
        numbers = [int(m.group(1)) for p in out.iterdir() if (m := _NUMBERED.match(p.name))]
        # Continue the numbering of an earlier session so that nothing recorded is overwritten.
        self._next = max(numbers, default=0) + 1
        self.recorded = 0
        #: Exchanges whose response body has been sent in full.
        self._finished: set[int] = set()

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            # No read timeout: a Responses stream may stay silent through minutes of queueing and prefill.
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(None, connect=30.0), follow_redirects=False
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._own_client:
            await self._client.aclose()
            self._client = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._exchange(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _number(self) -> int:
        n = self._next
        self._next += 1
        return n

    async def _exchange(self, scope: Scope, receive: Receive, send: Send) -> None:
        n = self._number()
        start = time.monotonic()
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        query: bytes = scope.get("query_string", b"")
        headers: list[tuple[bytes, bytes]] = list(scope["headers"])
        meta = Exchange(
            exchange=n,
            started_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
            method=scope["method"],
            path=raw_path.decode("latin-1"),
            query=query.decode("latin-1"),
            upstream=self.upstream,
            request_headers=_text_headers(headers, redact=True),
            request_file=f"{n:06d}.request.body",
        )
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                meta.outcome = "client_disconnected"
                await self._save(meta, bytes(body), [], start)
                return
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        url = self.upstream + raw_path.decode("latin-1") + ("?" + query.decode("latin-1") if query else "")
        # A bare Request, not client.build_request: the client's default headers (user-agent,
        # accept-encoding) would change what the upstream sees and so what it answers.
        request = httpx.Request(
            scope["method"],
            url,
            headers=forwardable(headers, drop=frozenset({b"host", b"content-length"})),
            content=bytes(body),
        )
        chunks: list[bytes] = []
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_disconnect, receive, tg.cancel_scope, meta)
                await self._relay(request, send, meta, chunks, start)
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._save(meta, bytes(body), chunks, start)

    async def _watch_disconnect(self, receive: Receive, scope: anyio.CancelScope, meta: Exchange) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                if meta.exchange not in self._finished:
                    meta.outcome = "client_disconnected"
                scope.cancel()
                return

    async def _relay(
        self, request: httpx.Request, send: Send, meta: Exchange, chunks: list[bytes], start: float
    ) -> None:
        try:
            response = await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            meta.outcome = f"upstream_error: {type(exc).__name__}: {exc}"
            error = {
                "error": {
                    "message": f"upstream unreachable: {type(exc).__name__}",
                    "type": "upstream_error",
                    "param": None,
                    "code": "upstream_error",
                }
            }
            payload = _encode(error)
            meta.status = 502
            self._finished.add(meta.exchange)
            await send(
                {
                    "type": "http.response.start",
                    "status": 502,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": payload, "more_body": False})
            return
        try:
            raw_headers = list(response.headers.raw)
            meta.status = response.status_code
            meta.response_headers = _text_headers(raw_headers, redact=False)
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": forwardable(raw_headers),
                }
            )
            async for chunk in response.aiter_raw():
                if not chunk:
                    continue
                if meta.first_byte_s is None:
                    meta.first_byte_s = round(time.monotonic() - start, 6)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                chunks.append(chunk)
            # Marked before the last send: the server may report http.disconnect for the finished
            # response before that send returns, and that is no hang-up.
            self._finished.add(meta.exchange)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except httpx.HTTPError as exc:
            # The upstream broke mid-body: end ours the same way, by closing without the final chunk.
            meta.outcome = f"upstream_error: {type(exc).__name__}: {exc}"
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()

    async def _save(self, meta: Exchange, body: bytes, chunks: list[bytes], start: float) -> None:
        meta.duration_s = round(time.monotonic() - start, 6)
        raw = b"".join(chunks)
        meta.response_bytes = len(raw)
        meta.chunks = len(chunks)
        headers = dict(meta.response_headers)
        if meta.status is not None:
            encoding = headers.get("content-encoding", "").strip().lower()
            decoded = _decode_body(raw, encoding)
            if decoded is not None:
                raw, meta.decoded_from = decoded, encoding
            meta.response_file = (
                f"{meta.exchange:06d}.response.{_body_suffix(headers.get('content-type', ''))}"
            )
        self._finished.discard(meta.exchange)
        await anyio.to_thread.run_sync(self._write, meta, body, raw)
        self.recorded += 1
        if self.on_saved is not None:
            self.on_saved(meta)

    def _write(self, meta: Exchange, body: bytes, raw: bytes) -> None:
        (self.out / meta.request_file).write_bytes(body)
        if meta.response_file is not None:
            (self.out / meta.response_file).write_bytes(raw)
        # The meta file goes last: its presence says the exchange is complete on disk.
        (self.out / f"{meta.exchange:06d}.meta.json").write_bytes(msgspec.json.format(_encode(meta)) + b"\n")


def _decode_body(raw: bytes, encoding: str) -> bytes | None:
    """Undo gzip/deflate for the saved copy (the client got the encoded bytes); ``None`` if not encoded."""
    if encoding not in ("gzip", "x-gzip", "deflate") or not raw:
        return None
    try:
        if encoding == "deflate":
            try:
                return zlib.decompress(raw)
            except zlib.error:
                return zlib.decompress(raw, -zlib.MAX_WBITS)
        return zlib.decompress(raw, 16 + zlib.MAX_WBITS)
    except zlib.error:
        return None


def proxy_app(upstream: str, out: Path) -> RecordingProxy:
    """The ASGI app ``accord record`` serves; mount it in any ASGI server to record behind it."""
    return RecordingProxy(upstream, out)


async def _wait_signal() -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            return


async def serve_proxy(
    upstream: str,
    host: str,
    port: int,
    out: Path,
    *,
    progress: TextIO | None = None,
    until: Callable[[], Awaitable[None]] = _wait_signal,
) -> None:
    """Record every exchange with ``upstream`` into ``out`` while serving on ``host:port`` until ``until``
    returns (by default: SIGINT or SIGTERM).

    A running count of recorded exchanges goes to ``progress`` (stderr) when it is a terminal.
    """
    proxy = proxy_app(upstream, out)
    counter = Counter("recorded", stream=progress, unit=" exchanges", every_step=True)
    proxy.on_saved = lambda _meta: counter.step()
    sock = bind_socket(host, port)
    bound = sock.getsockname()[1]
    print(f"accord record: http://{host}:{bound} -> {upstream}, recording into {out}", file=sys.stderr)
    try:
        await serve_on_socket(proxy, sock, until)
    finally:
        counter.close()
        await proxy.aclose()
        print(f"accord record: {proxy.recorded} exchanges recorded in {out}", file=sys.stderr)
