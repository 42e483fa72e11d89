"""SPEC H3: on shutdown in-flight streams finish or end with `response.failed` (server_shutting_down)."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx

from tests.oracle import check_stream
from tests.serving import parse_sse, running, scripted_settings, write_script


def test_stream_still_running_at_shutdown_ends_failed_and_clean(tmp_path: Path, worker_class: str) -> None:
    rules = [{"output": "tick " * 2000, "chunk_chars": 5, "chunk_delay_s": 0.01}]
    settings = scripted_settings(write_script(tmp_path, rules), worker_class=worker_class, shutdown_grace=0.3)
    body = bytearray()
    with running(settings) as srv:
        started = threading.Event()

        def consume() -> None:
            with httpx.stream(
                "POST", srv.v1 + "/responses", json={"input": "go", "stream": True}, timeout=20
            ) as r:
                for chunk in r.iter_bytes():
                    body.extend(chunk)
                    if b"output_text.delta" in body:
                        started.set()

        reader = threading.Thread(target=consume)
        reader.start()
        assert started.wait(10)
        srv.stop.set()  # the shutdown trigger: drain, grace, then end what is still running
        reader.join(20)
        assert not reader.is_alive()
    events = parse_sse(bytes(body))
    check_stream(events)
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["code"] == "server_shutting_down"


def test_short_stream_finishes_during_grace(tmp_path: Path, worker_class: str) -> None:
    rules = [{"output": "a short answer", "chunk_chars": 2, "chunk_delay_s": 0.05}]
    settings = scripted_settings(write_script(tmp_path, rules), worker_class=worker_class, shutdown_grace=5.0)
    body = bytearray()
    with running(settings) as srv:
        opened = threading.Event()

        def consume() -> None:
            with httpx.stream(
                "POST", srv.v1 + "/responses", json={"input": "go", "stream": True}, timeout=20
            ) as r:
                for chunk in r.iter_bytes():
                    body.extend(chunk)
                    opened.set()

        reader = threading.Thread(target=consume)
        reader.start()
        assert opened.wait(10)
        srv.stop.set()
        reader.join(20)
    events = parse_sse(bytes(body))
    assert check_stream(events)["status"] == "completed"
