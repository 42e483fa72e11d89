"""A live run's emitted batches -> Chat Completions and Messages bytes, read by the SDKs' SSE decoders.

Why: the HTTP edge will hand each batch the run emits to a Reframer and write the bytes; the
SDKs must read those bytes as the projected events, keepalives included (a ``ping`` while
the engine is silent, a comment line for Chat Completions), with the right ending. And a run
that fails before anything was sent must become the protocol's HTTP error, an over-long
prompt the text Claude Code compacts on.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
import pytest
from anthropic._streaming import SSEDecoder as AnthropicDecoder
from openai._streaming import SSEDecoder as OpenAIDecoder

from accord.engine.protocol import GenerationRequest
from accord.engine.scripted import Rule, Script, ScriptedEngine
from accord.events.chat_wire import chat_failure
from accord.events.messages_wire import messages_failure
from accord.events.reframe import Reframer, chat_reframer, messages_reframer
from accord.events.response import Opened
from accord.events.wire import WireEvent
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import ParseStage
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.run import ResponseRun
from accord.pipeline.tools import NoTools
from tests.protocols.runs import project


def _run(rule: Rule, *, keepalive: float = 0, max_context: int | None = None) -> ResponseRun:
    counter = itertools.count()
    return ResponseRun(
        engine=ScriptedEngine(Script(rules=[rule]), max_context=max_context),
        request=GenerationRequest(prompt="a prompt of some words"),
        opened=Opened(response_id="msg_1", created_at=1, model="m"),
        parse=ParseStage(reasoning_parser("qwen3")(None), NoTools()),
        tracker=ItemTracker(new_id=lambda p: f"{p}_{next(counter)}", now=lambda: 2),
        keepalive_interval=keepalive,
    )


def _stream(run: ResponseRun, reframer: Reframer[Any], backend: str) -> bytes:
    out: list[bytes] = []

    async def emit(batch: list[WireEvent]) -> None:
        out.append(reframer.feed(batch, run.log))

    anyio.run(run.run, emit, backend=backend)
    return b"".join(out)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_messages_bytes_decode_to_the_projection_with_pings_while_the_engine_is_silent(backend: str) -> None:
    run = _run(
        Rule(output="<think>a</think>Hello there", chunk_chars=3, first_chunk_delay_s=0.3), keepalive=0.05
    )
    raw = _stream(run, messages_reframer(), backend)
    decoded = list(AnthropicDecoder().iter_bytes(iter([raw])))
    assert run.keepalives_sent >= 1
    assert [e.event for e in decoded].count("ping") == run.keepalives_sent
    assert decoded[0].event == "message_start"
    data = [e.json() for e in decoded if e.event != "ping"]
    assert all(
        e.event == d["type"] for e, d in zip([e for e in decoded if e.event != "ping"], data, strict=True)
    )
    assert data == project(run.log.events, include_usage=False)[1]
    assert data[-1] == {"type": "message_stop"}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_chat_bytes_decode_to_the_projection_and_end_with_done(backend: str) -> None:
    run = _run(Rule(output="Hello there", chunk_chars=2, first_chunk_delay_s=0.3), keepalive=0.05)
    raw = _stream(run, chat_reframer(include_usage=True), backend)
    assert raw.count(b": keepalive\n\n") == run.keepalives_sent >= 1
    assert raw.endswith(b"data: [DONE]\n\n")
    decoded = [e for e in OpenAIDecoder().iter_bytes(iter([raw]))]
    assert decoded[-1].data == "[DONE]"
    assert [json.loads(e.data) for e in decoded[:-1]] == project(run.log.events, include_usage=True)[0]


def test_a_failure_mid_stream_ends_chat_with_its_error_and_done() -> None:
    from accord.engine.scripted import Fail

    run = _run(Rule(output="Hello there", chunk_chars=2, fail=Fail(after_chunks=2)))
    raw = _stream(run, chat_reframer(include_usage=False), "asyncio")
    frames = raw.split(b"\n\n")[:-1]
    assert frames[-1] == b"data: [DONE]"
    assert json.loads(frames[-2][len(b"data: ") :])["error"]["code"] == "engine_error"


def test_an_over_long_prompt_is_the_400_claude_code_compacts_on() -> None:
    run = _run(Rule(output="never"), max_context=3)
    _stream(run, messages_reframer(), "asyncio")
    status, body = messages_failure(run.log.snapshot)
    usage = run.log.snapshot.usage
    assert usage is not None and usage.input_tokens > 3
    assert status == 400
    assert body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": f"prompt is too long: {usage.input_tokens} tokens > 3 maximum",
        },
    }
    status, body = chat_failure(run.log.snapshot)
    assert status == 400 and body["error"]["code"] == "context_length_exceeded"
    assert body["error"]["type"] == "invalid_request_error"
