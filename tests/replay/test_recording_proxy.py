"""The recording proxy is transparent: same bytes, same pacing, disconnects passed on; and it records.

The upstream here is a small ASGI app on hypercorn that plays a corpus stream in slices, optionally
holding back until the test opens a gate -- which is how "no buffering" is proven without sleeping.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from accord.replay._serve import bind_socket, serve_on_socket
from accord.replay.audit import audit_path
from accord.replay.proxy import Exchange, RecordingProxy

pytestmark = pytest.mark.anyio

STREAM = (Path(__file__).parent / "streams" / "clean_reasoning_message.sse").read_bytes()


def slices(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


class Upstream:
    """Plays ``STREAM`` on POST /v1/responses; a gzip JSON body on /gzip; 404 elsewhere."""

    def __init__(self, chunks: list[bytes], gate_after: int | None = None) -> None:
        self.chunks = chunks
        self.gate_after = gate_after
        self.gate = anyio.Event()
        self.requests: list[dict[str, Any]] = []
        self.disconnected = anyio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests.append(
            {
                "path": scope["path"],
                "query": scope["query_string"],
                "body": body,
                "headers": [(k.decode(), v.decode()) for k, v in scope["headers"]],
            }
        )
        if scope["path"] == "/gzip":
            payload = gzip.compress(
                b'{"object": "response", "id": "resp_z", "output": [], "status": "completed"}'
            )
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-encoding", b"gzip"),
                        (b"content-length", str(len(payload)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": payload})
            return
        if scope["path"] != "/v1/responses":
            await send({"type": "http.response.start", "status": 404, "headers": [(b"x-hop", b"1")]})
            await send({"type": "http.response.body", "body": b"{}"})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"x-upstream", b"yes"),
                    (b"connection", b"x-hop"),
                    (b"x-hop", b"dropped"),
                ],
            }
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch, receive, tg.cancel_scope)
            for i, chunk in enumerate(self.chunks):
                if i == self.gate_after:
                    await self.gate.wait()
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            tg.cancel_scope.cancel()

    async def _watch(self, receive: Any, scope: anyio.CancelScope) -> None:
        if (await receive())["type"] == "http.disconnect":
            self.disconnected.set()
            scope.cancel()


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    sock = bind_socket("127.0.0.1", 0)
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_on_socket, app, sock, stop.wait)
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            stop.set()


@asynccontextmanager
async def proxied(upstream: Any, out: Path) -> AsyncIterator[tuple[str, str, list[Exchange]]]:
    saved: list[Exchange] = []
    async with serving(upstream) as up:
        proxy = RecordingProxy(up, out, on_saved=saved.append)
        async with serving(proxy) as via:
            yield up, via, saved


async def raw_post(client: httpx.AsyncClient, url: str) -> tuple[int, httpx.Headers, bytes]:
    request = client.build_request(
        "POST",
        url + "/v1/responses",
        json={"model": "m", "input": "hi", "stream": True},
        headers={"authorization": "Bearer sk-secret", "x-trace": "t1"},
    )
    response = await client.send(request, stream=True)
    data = b"".join([chunk async for chunk in response.aiter_raw()])
    await response.aclose()
    return response.status_code, response.headers, data


async def test_client_gets_the_same_bytes_as_directly_and_the_recording_audits_clean(tmp_path: Path) -> None:
    upstream = Upstream(slices(STREAM, 97))
    async with proxied(upstream, tmp_path) as (up, via, saved), httpx.AsyncClient() as client:
        direct = await raw_post(client, up)
        through = await raw_post(client, via)
    assert direct[2] == through[2] == STREAM
    assert through[0] == 200
    assert through[1]["content-type"] == "text/event-stream"
    assert through[1]["x-upstream"] == "yes"
    assert "x-hop" not in through[1]  # named in Connection: hop-by-hop, not forwarded
    [meta] = saved
    assert (tmp_path / "000001.response.sse").read_bytes() == STREAM
    body = json.loads((tmp_path / "000001.request.body").read_bytes())
    assert body == {"model": "m", "input": "hi", "stream": True}
    assert dict(meta.request_headers)["authorization"] == "<redacted>"
    assert dict(meta.request_headers)["x-trace"] == "t1"
    assert meta.outcome == "complete" and meta.status == 200 and meta.response_bytes == len(STREAM)
    # The upstream saw the client's own headers, credentials included, and no proxy additions.
    seen = dict(upstream.requests[-1]["headers"])
    assert seen["authorization"] == "Bearer sk-secret" and seen["host"] == up.removeprefix("http://")
    assert seen["user-agent"] == dict(upstream.requests[0]["headers"])["user-agent"]
    assert audit_path(tmp_path, __import__("io").StringIO()) == 0


async def test_each_chunk_is_passed_on_before_the_next_one_exists(tmp_path: Path) -> None:
    """No buffering: the first half arrives while the upstream is still held at its gate."""
    upstream = Upstream(slices(STREAM, 200), gate_after=3)
    async with proxied(upstream, tmp_path) as (_, via, saved), httpx.AsyncClient() as client:
        request = client.build_request("POST", via + "/v1/responses", content=b"{}")
        response = await client.send(request, stream=True)
        chunks = response.aiter_raw()
        received = b""
        with anyio.fail_after(10):
            while len(received) < 600:
                received += await chunks.__anext__()
        assert received == STREAM[:600]
        assert not upstream.gate.is_set()
        upstream.gate.set()
        with anyio.fail_after(10):
            async for chunk in chunks:
                received += chunk
        await response.aclose()
    assert received == STREAM
    assert saved[0].chunks >= 2


async def test_a_client_hangup_reaches_the_upstream_and_is_recorded(tmp_path: Path) -> None:
    upstream = Upstream(slices(STREAM, 200), gate_after=2)
    done = anyio.Event()
    saved: list[Exchange] = []

    def on_saved(meta: Exchange) -> None:
        saved.append(meta)
        done.set()

    async with serving(upstream) as up:
        proxy = RecordingProxy(up, tmp_path, on_saved=on_saved)
        async with serving(proxy) as via, httpx.AsyncClient() as client:
            request = client.build_request("POST", via + "/v1/responses", content=b"{}")
            response = await client.send(request, stream=True)
            async for _ in response.aiter_raw():
                break
            await response.aclose()
            with anyio.fail_after(10):
                await upstream.disconnected.wait()
                await done.wait()
    assert saved[0].outcome == "client_disconnected"
    assert (tmp_path / "000001.response.sse").read_bytes() == STREAM[:400]


async def test_encoded_bodies_pass_through_encoded_and_are_saved_decoded(tmp_path: Path) -> None:
    upstream = Upstream([])
    async with proxied(upstream, tmp_path) as (up, via, saved), httpx.AsyncClient() as client:
        direct = await client.get(up + "/gzip", headers={"accept-encoding": "gzip"})
        through = await client.get(via + "/gzip", headers={"accept-encoding": "gzip"})
    assert through.content == direct.content  # httpx decoded both: the same gzip bytes came through
    assert through.headers["content-encoding"] == "gzip"
    assert saved[0].decoded_from == "gzip"
    assert json.loads((tmp_path / "000001.response.json").read_bytes())["id"] == "resp_z"


async def test_an_unreachable_upstream_answers_502_and_is_recorded(tmp_path: Path) -> None:
    sock = bind_socket("127.0.0.1", 0)
    dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()
    saved: list[Exchange] = []
    proxy = RecordingProxy(dead, tmp_path, on_saved=saved.append)
    async with serving(proxy) as via, httpx.AsyncClient() as client:
        response = await client.post(via + "/v1/responses", content=b"{}")
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_error"
    assert saved[0].outcome.startswith("upstream_error: ConnectError")


async def test_numbering_continues_after_an_earlier_session(tmp_path: Path) -> None:
    (tmp_path / "000007.meta.json").write_text("{}")
    upstream = Upstream(slices(STREAM, 500))
    async with proxied(upstream, tmp_path) as (_, via, saved), httpx.AsyncClient() as client:
        await raw_post(client, via)
    assert saved[0].exchange == 8
    assert (tmp_path / "000008.response.sse").exists()


async def test_accord_record_serves_until_terminated(tmp_path: Path) -> None:
    """The command line: ``accord record --listen 0`` says where it listens, records, stops on SIGTERM."""
    import re
    import sys

    upstream = Upstream(slices(STREAM, 300))
    async with serving(upstream) as up:
        command = [
            sys.executable,
            "-m",
            "accord.cli",
            "record",
            "--upstream",
            up,
            "--listen",
            "0",
            "--out",
            str(tmp_path),
        ]
        async with await anyio.open_process(command) as process:
            assert process.stderr is not None
            banner = b""
            with anyio.fail_after(20):
                while b"\n" not in banner:
                    banner += await process.stderr.receive()
            match = re.search(rb"http://127\.0\.0\.1:(\d+)", banner)
            assert match is not None, banner
            async with httpx.AsyncClient() as client:
                through = await raw_post(client, f"http://127.0.0.1:{int(match.group(1))}")
            assert through[2] == STREAM
            process.terminate()
            with anyio.fail_after(20):
                assert await process.wait() == 0
                rest = b"".join([chunk async for chunk in process.stderr])
    assert b"1 exchanges recorded" in banner + rest
    assert (tmp_path / "000001.response.sse").read_bytes() == STREAM
