"""Chat Completions and Messages runs are traced like Responses runs, and replay without a change.

They are one event log underneath (their wire is a projection of it), so the trace records that log,
and ``accord replay`` checks it as it checks any other. They are not stored responses: no store record.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import httpx
import pytest

from accord.adapters.build import assemble
from accord.replay._tracefile import load_trace
from accord.replay.replay import replay_dir, trace_files
from tests.serving import running, scripted_settings, write_script

RULES: list[dict[str, Any]] = [
    {
        "when": {"last_input": "^weather"},
        "output": '<think>Look it up.</think><tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
        "</tool_call>",
        "chunk_chars": 6,
    },
    {"output": "<think>Hm.</think>Hello there.", "chunk_chars": 4},
]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.mark.parametrize("worker_class", ["asyncio", "trio"])
def test_chat_and_messages_runs_are_traced_and_replay_unchanged(tmp_path: Path, worker_class: str) -> None:
    settings = scripted_settings(
        write_script(tmp_path, RULES),
        worker_class=worker_class,
        reasoning_parser="qwen3",
        tool_parser="hermes",
        trace_dir=tmp_path / "traces",
    )
    built = assemble(settings)
    assert built.recorder is not None
    with running(settings, built.app) as server:
        chat = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "weather?"}]}
        chat["tools"] = [WEATHER]
        streamed = httpx.post(server.v1 + "/chat/completions", json=chat, timeout=30)
        assert streamed.status_code == 200
        messages = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
        whole = httpx.post(server.v1 + "/messages", json=messages, timeout=30)
        assert whole.status_code == 200 and whole.json()["content"][-1]["text"] == "Hello there."
        assert streamed.content.rstrip().endswith(b"data: [DONE]")
        assert b'"get_weather"' in streamed.content
    assert built.recorder.statistics().written == 2
    files = trace_files(tmp_path / "traces")
    assert len(files) == 2
    assert {str(load_trace(p).cause) for p in files} == {"completed"}
    out = io.StringIO()
    assert replay_dir(tmp_path / "traces", out) == 0, out.getvalue()
    assert "2 unchanged, 0 changed, 0 with invariant violations" in out.getvalue()
