"""``accord record`` and ``accord audit`` on Chat Completions and Messages exchanges.

The proxy in front of accord records streamed and whole-body exchanges of both protocols,
byte for byte what the client got, and the recording audits clean; then each protocol's own
defect classes are found in captures broken the way other servers break them.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from accord.replay.audit import audit_path, audit_text
from accord.replay.defects import PROTOCOL_CLASSES
from accord.replay.proxy import Exchange, RecordingProxy
from tests.replay.test_recording_proxy import serving
from tests.serving import running, scripted_settings, write_script

RULES: list[dict[str, Any]] = [
    {
        "when": {"last_input": "^call"},
        "output": "<think>Need both.</think>"
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',
        "chunk_chars": 7,
    },
    {"output": "<think>Let me see.</think>Hello there, how can I help?", "chunk_chars": 5},
]
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {}}}},
    }
]
MESSAGES_TOOLS = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {}}}}]


def _requests(text: str, stream: bool) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "/v1/chat/completions",
            {
                "model": "m",
                "stream": stream,
                "tools": CHAT_TOOLS,
                "messages": [{"role": "user", "content": text}],
            },
        ),
        (
            "/v1/messages",
            {
                "model": "m",
                "max_tokens": 200,
                "stream": stream,
                "tools": MESSAGES_TOOLS,
                "messages": [{"role": "user", "content": text}],
            },
        ),
    ]


@pytest.mark.anyio
async def test_recorded_chat_and_messages_exchanges_audit_clean(anyio_backend: str, tmp_path: Path) -> None:
    settings = scripted_settings(
        write_script(tmp_path, RULES),
        worker_class=anyio_backend,
        reasoning_parser="qwen3",
        tool_parser="hermes",
        store="none",
    )
    landed, arrivals = anyio.create_memory_object_stream[Exchange](16)
    out = tmp_path / "recorded"
    count = 0
    with running(settings) as server:
        proxy = RecordingProxy(server.base_url, out, on_saved=landed.send_nowait)
        async with serving(proxy) as via, httpx.AsyncClient(timeout=20) as client:
            for text in ("hello", "call the tool"):
                for stream in (True, False):
                    for path, body in _requests(text, stream):
                        response = await client.post(via + path, json=body, headers={"x-api-key": "k"})
                        assert response.status_code == 200, response.text
                        with anyio.fail_after(10):
                            saved = await arrivals.receive()
                        suffix = "sse" if stream else "json"
                        assert (
                            out / f"{saved.exchange:06d}.response.{suffix}"
                        ).read_bytes() == response.content
                        meta = json.loads((out / f"{saved.exchange:06d}.meta.json").read_text())
                        assert ["x-api-key", "<redacted>"] in meta["request_headers"]
                        count += 1
    report = io.StringIO()
    assert audit_path(out, report) == 0, report.getvalue()
    assert f"census: {count} inputs: {count} read ({count} sound, 0 defective)" in report.getvalue()


def _frames(events: list[dict[str, Any]]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


MESSAGES = [
    {"type": "message_start", "message": {"id": "msg_1", "type": "message", "content": []}},
    {"type": "ping"},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "t", "name": "f"},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'},
    },
    {"type": "content_block_stop", "index": 1},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}},
    {"type": "message_stop"},
]


#: Every protocol-specific class the captures below were found to have (checked complete at the end).
_FOUND: set[str] = set()


def _codes(text: str) -> set[str]:
    codes = audit_text(text).codes()
    _FOUND.update(codes & PROTOCOL_CLASSES)
    return codes


def test_messages_grammar_defects() -> None:
    assert audit_text(_frames(MESSAGES)).status == "sound"
    skipped = [dict(e) for e in MESSAGES]
    for event in skipped[5:8]:
        event["index"] = 2
    assert "block_index_gap" in _codes(_frames(skipped))
    assert "missing_terminal" in _codes(_frames(MESSAGES[:-1]))
    assert "messages_grammar" in _codes(_frames(MESSAGES[:4] + MESSAGES[8:]))  # block 0 never stopped
    wrong = [
        *MESSAGES[:3],
        {**MESSAGES[3], "delta": {"type": "input_json_delta", "partial_json": "{"}},
        *MESSAGES[4:],
    ]
    assert "delta_kind_mismatch" in _codes(_frames(wrong))
    broken = [*MESSAGES[:6], {**MESSAGES[6], "delta": {"type": "input_json_delta", "partial_json": "{oops"}}]
    assert "tool_input_not_json" in _codes(_frames(broken + MESSAGES[7:]))
    assert "messages_after_end" in _codes(_frames([*MESSAGES, MESSAGES[2]]))


def _chat(chunks: list[dict[str, Any]], done: bool = True) -> str:
    text = "".join(
        f"data: {json.dumps({'id': 'c1', 'object': 'chat.completion.chunk', **c})}\n\n" for c in chunks
    )
    return text + ("data: [DONE]\n\n" if done else "")


def _call(index: int, *, opening: bool, arguments: str = "") -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if opening:
        call |= {"id": f"call_{index}", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


ROLE = {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
END = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}


def test_chat_defects_index_continuity_and_the_end() -> None:
    sound = [
        ROLE,
        _call(0, opening=True),
        _call(0, opening=False, arguments="{}"),
        _call(1, opening=True),
        END,
    ]
    assert audit_text(_chat(sound)).status == "sound"
    assert "tool_call_index_gap" in _codes(_chat([ROLE, _call(0, opening=True), _call(2, opening=True), END]))
    assert "chat_call_reopened" in _codes(_chat([ROLE, _call(0, opening=True), _call(0, opening=True), END]))
    assert "missing_terminal" in _codes(_chat(sound, done=False))
    assert "chat_grammar" in _codes(_chat([ROLE, _call(0, opening=True)]))
    assert "chat_role_repeated" in _codes(_chat([ROLE, ROLE, END]))
    after = _chat(sound) + _chat([END], done=False)
    assert "chat_after_done" in _codes(after)


def test_every_protocol_defect_class_is_planted_above() -> None:
    _FOUND.clear()
    test_messages_grammar_defects()
    test_chat_defects_index_continuity_and_the_end()
    assert _FOUND == PROTOCOL_CLASSES
