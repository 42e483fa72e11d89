"""Issue: one client cannot hurt the others. A 30 MB many-part body must not stall other streams,
whichever protocol it comes in on (Responses, Chat Completions, Messages).

Before the shape pass and the worker process, such a body froze every stream for seconds and
grew the server by about 25 bytes per body byte; this proves both stay bounded.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import anyio
import httpx
import pytest

from tests.hardening.processes import Served
from tests.serving import read_gaps

STREAMS = 16


#: Where each protocol's many-part body goes, and the field its refusal names.
PROTOCOLS = {
    "responses": ("/responses", "input[0].content"),
    "chat": ("/chat/completions", "messages[0].content"),
    "messages": ("/messages", "messages[0].content"),
}


def _many_parts(target: int, protocol: str = "responses") -> bytes:
    part = {"type": "input_text" if protocol == "responses" else "text", "text": "x" * 8}
    count = target // len(json.dumps(part))
    message = {"role": "user", "content": [part] * count}
    if protocol == "responses":
        return json.dumps({"input": [message]}).encode()
    return json.dumps({"model": "m", "max_tokens": 16, "messages": [message]}).encode()


@pytest.mark.slow
@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_many_part_body_leaves_other_streams_flowing(tmp_path: Path, protocol: str) -> None:
    rules = [{"output": "tick " * 400, "chunk_chars": 5, "chunk_delay_s": 0.02}]
    server = Served(tmp_path, rules, "--decode-timeout", "20")
    path, refused_param = PROTOCOLS[protocol]
    try:
        body = _many_parts(30_000_000, protocol)
        # Warm the decode worker first, as a server that has served one large body has it.
        warm = httpx.post(
            server.v1 + path,
            content=_many_parts(400_000, protocol),
            headers={"content-type": "application/json"},
            timeout=60,
        )
        assert warm.status_code == 200, warm.text
        gaps: list[float] = []
        big: list[httpx.Response] = []

        async def stream(client: httpx.AsyncClient, ready: threading.Event) -> None:
            await read_gaps(client, gaps, ready.set)

        def send_big(ready: threading.Event) -> None:
            ready.wait(30)
            big.append(
                httpx.post(
                    server.v1 + path,
                    content=body,
                    headers={"content-type": "application/json"},
                    timeout=120,
                )
            )

        ready = threading.Event()
        server.reset_peak()
        base_rss = server.status_kib("VmRSS")
        sender = threading.Thread(target=send_big, args=(ready,))
        sender.start()

        async def main() -> None:
            limits = httpx.Limits(max_connections=STREAMS)
            async with (
                httpx.AsyncClient(base_url=server.base_url, timeout=60, limits=limits) as client,
                anyio.create_task_group() as group,
            ):
                for _ in range(STREAMS):
                    group.start_soon(stream, client, ready)

        anyio.run(main)
        sender.join(120)
        peak_growth = (server.status_kib("VmHWM") - base_rss) * 1024
        assert big and big[0].status_code == 400, big[0].text if big else "no answer"
        error = big[0].json()["error"]
        # OpenAI's error names the field in ``param``; Anthropic's has no such field, so its message does.
        assert error.get("param") == refused_param or error["message"].startswith(refused_param)
        gaps.sort()
        p99 = gaps[int(len(gaps) * 0.99)]
        print(
            f"\nbody {len(body) / 1e6:.1f} MB, {len(gaps)} gaps, p99 {p99 * 1000:.1f} ms, "
            f"max {gaps[-1] * 1000:.1f} ms, server peak RSS growth {peak_growth / 1e6:.1f} MB"
        )
        assert p99 < 0.100
        assert peak_growth < 2 * len(body)
    finally:
        server.close()
