"""Progress bars go to a terminal only: never into a file or a pipe."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import httpx

from accord.replay.progress import Counter, bar
from accord.replay.proxy import serve_proxy
from tests.remote.fake_vllm import FakeVLLM
from tests.remote.harness import Served
from tests.serving import free_port


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_bar_when_not_a_terminal() -> None:
    stream = io.StringIO()
    assert list(bar(range(5), "x", stream=stream)) == [0, 1, 2, 3, 4]
    counter = Counter("x", total=3, stream=stream)
    counter.step()
    counter.close()
    assert stream.getvalue() == ""


def test_bar_on_a_terminal() -> None:
    stream = _Terminal()
    assert list(bar(range(5), "audit", stream=stream)) == [0, 1, 2, 3, 4]
    counter = Counter("fuzz pipeline", total=3, stream=stream)
    for _ in range(3):
        counter.step()
    counter.close()
    text = stream.getvalue()
    assert "audit:" in text and "/5" in text
    assert "fuzz pipeline:" in text and "/3" in text


def test_record_counts_exchanges_on_a_terminal(tmp_path: Path) -> None:
    """``accord record`` keeps a running count of what it has recorded, on a terminal only."""
    seen_two = anyio.Event()

    class Watched(_Terminal):
        def write(self, text: str) -> int:
            if "recorded: 2" in text:
                seen_two.set()
            return super().write(text)

    stream = Watched()
    upstream = Served(FakeVLLM("up", model="m")).start()
    proxy_port = free_port()

    async def main() -> None:
        with anyio.fail_after(30):
            await record_two()

    async def record_two() -> None:
        done = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: serve_proxy(
                    upstream.url, "127.0.0.1", proxy_port, tmp_path, progress=stream, until=done.wait
                )
            )
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{proxy_port}") as client:
                for _ in range(50):
                    try:
                        await client.get("/v1/models")
                        break
                    except httpx.ConnectError:
                        await anyio.sleep(0.1)
                await client.get("/v1/models")
            await seen_two.wait()
            done.set()

    try:
        anyio.run(main)
    finally:
        upstream.stop()
    assert "recorded: 2" in stream.getvalue()
