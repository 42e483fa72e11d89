"""A varied session against accord with traces on: text, reasoning, a tool call, failures, a length cut,
a context overflow, keepalives, a client hang-up, a non-streamed request and two continuations (by
previous_response_id and by item_reference) -- the issue's acceptance session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from accord.adapters.build import assemble
from accord.adapters.traces import TraceRecorder
from tests.serving import running, scripted_settings, write_script

RULES: list[dict[str, Any]] = [
    {
        "when": {"last_input": "^fail"},
        "output": "<think>Hm.</think>partial answer",
        "chunk_chars": 3,
        "fail": {"after_chunks": 4},
    },
    {
        "when": {"last_input": "^long"},
        "output": "<think>Counting</think> one two three four five six",
        "finish": "length",
    },
    {"when": {"last_input": "^huge"}, "output": "never"},
    {"when": {"last_input": "^slow"}, "output": "late answer", "first_chunk_delay_s": 0.7},
    {
        "when": {"last_input": "^call"},
        "output": '<think>Need the weather.</think>Checking.<tool_call>{"name": "get_weather", '
        '"arguments": {"city": "Paris"}}</tool_call><tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',
        "chunk_chars": 7,
    },
    {"when": {"last_input": "^endless"}, "output": "tick " * 400, "chunk_chars": 5, "chunk_delay_s": 0.01},
    {"output": "<think>Let me see.</think>Hello there, how can I help?", "chunk_chars": 5},
]
TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
SECRET = "zebra-umbrella-4711"


def run_session(
    tmp: Path, worker_class: str = "asyncio", *, redact: bool = False
) -> tuple[Path, TraceRecorder]:
    """Serve with traces into ``tmp/traces``, run the session, stop the server.

    Stopping is what flushes: hypercorn lets the requests finish (the hang-up's included) before the
    lifespan ends, and the recorder's writer drains its queue as the lifespan ends.
    """
    script = write_script(tmp, RULES)
    settings = scripted_settings(
        script,
        worker_class=worker_class,
        reasoning_parser="qwen3",
        tool_parser="hermes",
        trace_dir=tmp / "traces",
        trace_redact=redact,
        keepalive_interval=0.25,
        max_context=200,
    )
    # The server `accord serve` builds; the recorder itself is kept here.
    built = assemble(settings)
    app, recorder = built.app, built.recorder
    assert recorder is not None
    with running(settings, app) as server:
        url = server.v1 + "/responses"
        for text in ("hello " + SECRET, "call the tool", "fail now", "long", "slow", "huge " + "word " * 300):
            body: dict[str, Any] = {
                "model": "m",
                "input": text,
                "stream": True,
                "tools": TOOLS,
                "instructions": "Be brief. " + SECRET,
            }
            if text == "long":
                body["max_output_tokens"] = 4
            assert httpx.post(url, json=body, timeout=20).status_code == 200
        first = httpx.post(url, json={"model": "m", "input": "hello"}, timeout=20).json()
        # Continuations: the trace records the stored history and referenced items they were built from.
        follow_up = {
            "model": "m",
            "input": "hello again",
            "previous_response_id": first["id"],
            "stream": True,
        }
        assert httpx.post(url, json=follow_up, timeout=20).status_code == 200
        message_id = next(i["id"] for i in first["output"] if i["type"] == "message")
        referenced = [
            {"type": "item_reference", "id": message_id},
            {"role": "user", "content": "hello, go on"},
        ]
        assert (
            httpx.post(url, json={"model": "m", "input": referenced, "stream": True}, timeout=20).status_code
            == 200
        )
        with httpx.stream("POST", url, json={"model": "m", "input": "endless", "stream": True}) as response:
            for n, _ in enumerate(response.iter_raw()):
                if n >= 3:
                    break
        metrics = httpx.get(server.base_url + "/metrics").text
        assert "accord_traces_dropped_total 0" in metrics
    return tmp / "traces", recorder
