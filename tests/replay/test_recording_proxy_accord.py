"""Issue acceptance: the recording proxy in front of accord hands the client what accord sent.

accord mints fresh ids and timestamps per response, so a direct and a proxied request are compared with
those normalised; the proxied client's bytes and the recording are compared exactly. The recorded
session (text, reasoning, a tool call, a failure, a length cut) must then audit clean.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from accord.replay.audit import audit_path
from accord.replay.proxy import Exchange, RecordingProxy
from tests.replay.test_recording_proxy import serving
from tests.serving import running, scripted_settings, write_script

pytestmark = pytest.mark.anyio

RULES: list[dict[str, Any]] = [
    {
        "when": {"last_input": "^fail"},
        "output": "partial answer",
        "chunk_chars": 3,
        "fail": {"after_chunks": 2},
    },
    {"when": {"last_input": "^long"}, "output": "one two three four five six", "finish": "length"},
    {
        "when": {"last_input": "^call"},
        "output": '<think>Need the weather.</think><tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
        "chunk_chars": 7,
    },
    {"output": "<think>Let me see.</think>Hello there, how can I help?", "chunk_chars": 5},
]
TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
_IDS = re.compile(rb"\b(resp|rs|msg|fc|ctc|call)_[0-9A-Za-z]{6,}")
_TIMES = re.compile(rb'"(created_at|completed_at)":\s*[0-9.]+')


def normalise(raw: bytes) -> bytes:
    names: dict[bytes, bytes] = {}

    def name(m: re.Match[bytes]) -> bytes:
        return names.setdefault(m.group(0), m.group(1) + b"_" + str(len(names)).encode())

    return _TIMES.sub(rb'"\1":0', _IDS.sub(name, raw))


async def post(client: httpx.AsyncClient, base: str, text: str) -> bytes:
    body = {
        "model": "m",
        "input": text,
        "stream": True,
        "tools": TOOLS,
        "max_output_tokens": 3 if text == "long" else None,
    }
    response = await client.post(
        base + "/v1/responses", json={k: v for k, v in body.items() if v is not None}
    )
    assert response.status_code == 200
    return response.content


async def test_proxied_streams_match_direct_ones_and_the_session_audits_clean(
    anyio_backend: str, tmp_path: Path
) -> None:
    script = write_script(tmp_path, RULES)
    settings = scripted_settings(
        script, worker_class=anyio_backend, reasoning_parser="qwen3", tool_parser="hermes"
    )
    saved: list[Exchange] = []
    # The exchange is written after its last byte went out, so the test waits for each one to land.
    landed, arrivals = anyio.create_memory_object_stream[Exchange](16)
    out = tmp_path / "recorded"
    with running(settings) as server:
        proxy = RecordingProxy(server.base_url, out, on_saved=landed.send_nowait)
        async with serving(proxy) as via, httpx.AsyncClient(timeout=20) as client:
            for text in ("hello", "call the tool", "fail now", "long"):
                direct = await post(client, server.base_url, text)
                through = await post(client, via, text)
                assert normalise(through) == normalise(direct), text
                with anyio.fail_after(10):
                    saved.append(await arrivals.receive())
                assert (out / f"{saved[-1].exchange:06d}.response.sse").read_bytes() == through
    assert [m.outcome for m in saved] == ["complete"] * 4
    report = io.StringIO()
    assert audit_path(out, report) == 0, report.getvalue()
    assert "census: 4 inputs: 4 read (4 sound, 0 defective)" in report.getvalue()
