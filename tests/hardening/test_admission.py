"""Admission control: a full server refuses at once with Retry-After; nothing waits forever."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import httpx
import pytest

from accord.adapters.http.admission import DEFAULT_MAX_ACTIVE, Admission, default_max_active
from accord.engine.protocol import EngineCapabilities
from accord.errors import Overloaded
from tests.serving import running, scripted_settings, write_script


@pytest.mark.anyio
async def test_waiters_are_admitted_in_turn_and_the_queue_is_bounded() -> None:
    admission = Admission(2, 1, queue_timeout=5.0, retry_after=3.0)
    first, second = await admission.admit(), await admission.admit()
    admitted = anyio.Event()

    async def wait_for_place() -> None:
        ticket = await admission.admit()
        admitted.set()
        ticket.release()

    async with anyio.create_task_group() as group:
        group.start_soon(wait_for_place)
        await anyio.wait_all_tasks_blocked()
        assert admission.waiting == 1
        with pytest.raises(Overloaded) as caught:
            await admission.admit()
        assert caught.value.status == 429
        assert dict(caught.value.headers) == {"retry-after": "3"}
        first.release()
        first.release()  # a second release gives nothing back twice
        await admitted.wait()
    assert admission.active == 1
    second.release()
    assert admission.active == 0


@pytest.mark.anyio
async def test_a_wait_past_the_queue_timeout_is_refused() -> None:
    admission = Admission(1, 4, queue_timeout=0.05, retry_after=1.0)
    held = await admission.admit()
    with pytest.raises(Overloaded):
        await admission.admit()
    assert admission.waiting == 0
    held.release()
    (await admission.admit()).release()


@pytest.mark.anyio
async def test_draining_refuses_with_503() -> None:
    with pytest.raises(Overloaded) as caught:
        await Admission(4, 4, queue_timeout=1.0, retry_after=1.0).admit(draining=True)
    assert caught.value.status == 503
    assert caught.value.code == "server_shutting_down"


def test_full_queue_answers_429_with_retry_after_and_nobody_hangs(tmp_path: Path, worker_class: str) -> None:
    rules = [{"output": "tick " * 200, "chunk_chars": 5, "chunk_delay_s": 0.02}]
    settings = scripted_settings(
        write_script(tmp_path, rules),
        worker_class=worker_class,
        max_active_requests=2,
        max_waiting_requests=1,
        queue_timeout=30.0,
        retry_after=4.0,
    )
    with running(settings) as srv:
        streaming = [threading.Event(), threading.Event()]
        results: list[int] = []

        def stream(flag: threading.Event | None) -> None:
            with httpx.stream(
                "POST", srv.v1 + "/responses", json={"input": "go", "stream": True}, timeout=30
            ) as r:
                for chunk in r.iter_bytes():
                    if flag is not None and b"output_text.delta" in chunk:
                        flag.set()
                results.append(r.status_code)

        runners = [threading.Thread(target=stream, args=(flag,)) for flag in streaming]
        for runner in runners:
            runner.start()
        assert all(flag.wait(10) for flag in streaming)
        waiter = threading.Thread(target=stream, args=(None,))
        waiter.start()
        for _ in range(500):
            if srv.app.context.admission is not None and srv.app.context.admission.waiting == 1:
                break
            threading.Event().wait(0.01)
        refused = httpx.post(srv.v1 + "/responses", json={"input": "go"}, timeout=10)
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "4"
        assert refused.json()["error"]["code"] == "server_overloaded"
        for thread in [*runners, waiter]:
            thread.join(30)
            assert not thread.is_alive()
        assert results == [200, 200, 200]


def test_the_default_limit_is_twice_the_batch_the_engine_declares() -> None:
    assert default_max_active(EngineCapabilities(max_batch=8)) == 16
    assert default_max_active(EngineCapabilities()) == DEFAULT_MAX_ACTIVE
