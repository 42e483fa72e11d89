"""SPEC W10: a client that leaves at any moment is client_disconnected, never internal_error.

Each client reads a stream up to a given event (every index, then random ones), and closes
its socket, sometimes with a reset. The server must record every run as completed or
client_disconnected; before the fix about 1-2% hit BrokenResourceError in the producer on
asyncio and were stored as failed.
"""

from __future__ import annotations

import json
import random
import socket
import struct
import threading
from pathlib import Path

import pytest

from tests.serving import Server, running, scripted_settings, write_script

CHUNKS = 30


def _leave_after(port: int, events: int, reset: bool) -> None:
    sock = socket.socket()
    sock.connect(("127.0.0.1", port))
    body = json.dumps({"input": "go", "stream": True}).encode()
    sock.sendall(
        b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    seen = b""
    while seen.count(b"event: ") < events:
        chunk = sock.recv(65536)
        if not chunk:
            break
        seen += chunk
    if reset:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _settled(srv: Server) -> dict[str, int]:
    metrics = srv.app.metrics
    for _ in range(1000):
        if metrics.active_streams == 0:
            break
        threading.Event().wait(0.01)
    causes: dict[str, int] = {}
    for (route, _status, cause), n in metrics.requests.items():
        if route == "responses":
            causes[cause] = causes.get(cause, 0) + n
    return causes


def _disconnect_many(tmp_path: Path, worker_class: str, count: int, seed: int) -> None:
    rules = [{"output": "word " * CHUNKS, "chunk_chars": 5, "chunk_delay_s": 0.001}]
    settings = scripted_settings(write_script(tmp_path, rules), worker_class=worker_class, store="none")
    rng = random.Random(seed)
    total_events = CHUNKS + 8  # deltas plus the opening and closing events
    plan = [(k, k % 2 == 1) for k in range(total_events + 1)]
    plan += [(rng.randrange(total_events + 1), rng.random() < 0.5) for _ in range(count - len(plan))]
    with running(settings) as srv:
        port = int(srv.base_url.rsplit(":", 1)[1])
        for start in range(0, len(plan), 8):
            group = [
                threading.Thread(target=_leave_after, args=(port, k, reset))
                for k, reset in plan[start : start + 8]
            ]
            for thread in group:
                thread.start()
            for thread in group:
                thread.join(30)
        causes = _settled(srv)
    print(f"\n{worker_class}: {causes}")
    # A client that leaves before its request is read leaves no run (or a 400, "rejected").
    assert sum(causes.values()) >= 0.9 * len(plan)
    assert set(causes) <= {"completed", "client_disconnected", "rejected"}, causes


def test_disconnect_at_every_event_is_never_an_internal_error(tmp_path: Path, worker_class: str) -> None:
    _disconnect_many(tmp_path, worker_class, 80, seed=1)


@pytest.mark.slow
def test_a_thousand_random_disconnects_are_never_an_internal_error(tmp_path: Path, worker_class: str) -> None:
    _disconnect_many(tmp_path, worker_class, 1000, seed=2)
