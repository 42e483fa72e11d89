"""A client that stops reading cannot hold its stream, or the server's exit, forever (SPEC H3, W10).

A raw socket with a small receive buffer reads the stream's opening, learns the response id,
and never reads again; the server must still exit within the grace period plus 2 s of
SIGTERM on both worker classes, with that response stored as ended by the shutdown.
"""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

import httpx
import pytest

from tests.hardening.processes import Served

GRACE = 1.0


def _open_stalled_stream(port: int) -> tuple[socket.socket, str]:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    body = json.dumps({"input": "go", "stream": True}).encode()
    sock.sendall(
        b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    seen = b""
    while (found := re.search(rb'"id":"(resp_[0-9a-f]+)"', seen)) is None:
        chunk = sock.recv(1024)
        assert chunk, seen
        seen += chunk
    return sock, found[1].decode()


@pytest.mark.slow
def test_sigterm_with_a_never_reading_client_exits_within_grace_and_stores_it(
    tmp_path: Path, worker_class: str
) -> None:
    rules = [{"output": "tick " * 400_000, "chunk_chars": 200, "chunk_delay_s": 0.0005}]
    server = Served(tmp_path, rules, "--shutdown-grace", str(GRACE), worker_class=worker_class)
    try:
        sock, response_id = _open_stalled_stream(server.port)
        server.terminate()
        signalled = time.monotonic()
        server.process.wait(GRACE + 10)
        took = time.monotonic() - signalled
        sock.close()
        print(f"\n{worker_class}: exited {took:.2f} s after SIGTERM (grace {GRACE} s)")
        assert server.process.returncode == 0, server.log_path.read_text()[-3000:]
        assert took < GRACE + 2.0
    finally:
        server.close()
    again = Served(tmp_path, rules, worker_class=worker_class)
    try:
        stored = httpx.get(f"{again.v1}/responses/{response_id}", timeout=10).json()
    finally:
        again.close()
    assert stored["status"] == "failed"
    assert stored["error"]["code"] == "server_shutting_down"


@pytest.mark.slow
def test_a_stream_whose_client_stops_reading_ends_client_disconnected(
    tmp_path: Path, worker_class: str
) -> None:
    rules = [{"output": "tick " * 400_000, "chunk_chars": 200, "chunk_delay_s": 0.0005}]
    server = Served(tmp_path, rules, "--write-timeout", "1", worker_class=worker_class)
    try:
        sock, response_id = _open_stalled_stream(server.port)
        deadline = time.monotonic() + 30
        ended: list[dict[str, object]] = []
        while not ended and time.monotonic() < deadline:
            ended = [
                line
                for line in server.log_lines()
                if line.get("event") == "response" and line.get("response_id") == response_id
            ]
            time.sleep(0.1)
        sock.close()
        assert ended, server.log_path.read_text()[-3000:]
        assert ended[0]["cause"] == "client_disconnected"
        # The server is still serving others.
        assert httpx.get(server.base_url + "/health", timeout=5).status_code == 200
    finally:
        server.close()
