"""The openai and anthropic SDKs against /v1/chat/completions and /v1/messages over hypercorn.

Issue acceptance: each SDK's streamed call, its stream helper's final object and its plain
call agree item for item; a tool round trip, parallel calls, ``response_format`` with the
openai SDK's ``parse``, thinking blocks whose signature replays, and ``count_tokens``. An
over-long prompt is Anthropic's 400 ``prompt is too long`` (what Claude Code compacts on),
streamed or not; a long prefill streamed gets ``ping`` s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from pydantic import BaseModel

from tests.serving import running, scripted_settings, write_script

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
TWO_CALLS = (
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_time", "arguments": {"zone": "CET"}}\n</tool_call>'
)
RULES: list[dict[str, Any]] = [
    # After a tool result: the answer that uses it.
    {
        "when": {"last_item_type": "function_call_output"},
        "output": "<think>got it</think>It is sunny in Paris.",
    },
    {"when": {"last_input": "^both"}, "output": "<think>two things</think>" + TWO_CALLS, "chunk_chars": 9},
    {"when": {"last_input": "^weather"}, "output": "<think>look it up</think>" + CALL, "chunk_chars": 7},
    {"when": {"last_input": "^json"}, "output": '<think>shape it</think>{"city": "Paris", "days": 2}'},
    {
        "when": {"last_input": "^count"},
        "output": "<think></think>one, two, three, STOP four",
        "chunk_chars": 3,
    },
    {"when": {"last_input": "^turn"}, "output": "<think></think>done<|im_end|>never shown"},
    {"when": {"last_input": "^slow"}, "output": "<think></think>late", "first_chunk_delay_s": 1.0},
    {
        "when": {"last_input": "^short"},
        "output": "<think></think>one two three four five six",
        "chunk_chars": 4,
    },
    {"output": "<think>say hello</think>Hello there, how can I help?", "chunk_chars": 5},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
        },
    },
]
ANTHROPIC_TOOLS = [
    {"name": t["function"]["name"], "description": "", "input_schema": t["function"]["parameters"]}
    for t in TOOLS
]


@pytest.fixture
def server(tmp_path: Path, worker_class: str) -> Any:
    script = write_script(tmp_path, RULES)
    settings = scripted_settings(
        script,
        worker_class=worker_class,
        keepalive_interval=0.3,
        max_context=400,
        reasoning_parser="qwen3",
        tool_parser="hermes",
        store="none",
    )
    with running(settings) as srv:
        yield srv


def oai(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.v1, api_key="unused", max_retries=0, timeout=20)


def ant(server: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key="unused", max_retries=0, timeout=20)


def _message(completion: Any) -> dict[str, Any]:
    """What a chat completion says, ids aside (each call is a response of its own)."""
    choice = completion.choices[0]
    message = choice.message.model_dump(exclude_none=True)
    for call in message.get("tool_calls", ()):
        call.pop("id")
    return {"message": message, "finish_reason": choice.finish_reason}


def _streamed_chat(client: openai.OpenAI, **kwargs: Any) -> dict[str, Any]:
    """The streamed chunks accumulated by hand, the way a client without the helper does."""
    content, reasoning, calls, finish = [], [], {}, None
    for chunk in client.chat.completions.create(stream=True, **kwargs):
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta.model_dump(exclude_none=True)
        content.append(delta.get("content") or "")
        reasoning.append(delta.get("reasoning_content") or "")
        for call in delta.get("tool_calls", ()):
            slot = calls.setdefault(
                call["index"], {"type": "function", "function": {"name": "", "arguments": ""}}
            )
            function = call.get("function", {})
            slot["function"]["name"] += function.get("name") or ""
            slot["function"]["arguments"] += function.get("arguments") or ""
        finish = choice.finish_reason or finish
    message: dict[str, Any] = {"role": "assistant"}
    if "".join(content):
        message["content"] = "".join(content)
    if "".join(reasoning):
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"message": message, "finish_reason": finish}


def _three_ways(client: openai.OpenAI, **kwargs: Any) -> dict[str, Any]:
    plain = _message(client.chat.completions.create(**kwargs))
    streamed = _streamed_chat(client, **kwargs)
    with client.chat.completions.stream(**kwargs) as stream:
        helper = _message(stream.get_final_completion())
    # The helper's parsed message carries the typed fields the SDK adds (parsed, refusal, ...).
    for view in (plain, helper):
        view["message"] = {k: v for k, v in view["message"].items() if k not in ("parsed", "refusal")}
        for call in view["message"].get("tool_calls", ()):
            call.pop("index", None)  # the helper keeps the chunk's index on each accumulated call
            call["function"].pop("parsed_arguments", None)
    assert plain == streamed == helper
    return plain


def test_chat_create_streamed_and_helper_agree(server: Any) -> None:
    got = _three_ways(oai(server), model="m", messages=[{"role": "user", "content": "hi"}])
    assert got == {
        "message": {
            "role": "assistant",
            "content": "Hello there, how can I help?",
            "reasoning_content": "say hello",
        },
        "finish_reason": "stop",
    }


def test_chat_usage_and_length(server: Any) -> None:
    client = oai(server)
    plain = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "short"}], max_tokens=3
    )
    assert plain.choices[0].finish_reason == "length"
    assert plain.usage is not None and plain.usage.completion_tokens == 3
    chunks = list(
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens_details is not None
    assert len({c.id for c in chunks}) == 1 and chunks[0].id.startswith("chatcmpl")


def test_chat_tool_round_trip_and_parallel_calls(server: Any) -> None:
    client = oai(server)
    asked = [{"role": "user", "content": "weather in Paris?"}]
    first = _three_ways(client, model="m", messages=asked, tools=TOOLS)
    assert first["finish_reason"] == "tool_calls"
    assert [c["function"] for c in first["message"]["tool_calls"]] == [
        {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    ]
    call = client.chat.completions.create(model="m", messages=asked, tools=TOOLS).choices[0].message
    assert call.tool_calls is not None
    answered = [
        *asked,
        call.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.tool_calls[0].id, "content": "sunny"},
    ]
    second = _three_ways(client, model="m", messages=answered, tools=TOOLS)
    assert second["message"]["content"] == "It is sunny in Paris." and second["finish_reason"] == "stop"
    both = _three_ways(client, model="m", messages=[{"role": "user", "content": "both please"}], tools=TOOLS)
    assert [c["function"]["name"] for c in both["message"]["tool_calls"]] == ["get_weather", "get_time"]


class Forecast(BaseModel):
    city: str
    days: int


def test_chat_response_format_with_parse(server: Any) -> None:
    parsed = oai(server).chat.completions.parse(
        model="m", messages=[{"role": "user", "content": "json please"}], response_format=Forecast
    )
    assert parsed.choices[0].message.parsed == Forecast(city="Paris", days=2)


def _blocks(message: Any) -> list[dict[str, Any]]:
    blocks = []
    for block in message.content:
        data = block.model_dump(exclude_none=True)
        data.pop("id", None)
        data.pop("signature", None)
        blocks.append(data)
    return blocks


def _both_ways(client: anthropic.Anthropic, **kwargs: Any) -> tuple[Any, Any]:
    plain = client.messages.create(**kwargs)
    with client.messages.stream(**kwargs) as stream:
        final = stream.get_final_message()
    assert _blocks(plain) == _blocks(final)
    assert (plain.stop_reason, plain.usage.input_tokens, plain.usage.output_tokens) == (
        final.stop_reason,
        final.usage.input_tokens,
        final.usage.output_tokens,
    )
    return plain, final


def test_messages_create_and_stream_agree(server: Any) -> None:
    plain, final = _both_ways(
        ant(server), model="m", max_tokens=200, messages=[{"role": "user", "content": "hi"}]
    )
    assert _blocks(plain) == [
        {"type": "thinking", "thinking": "say hello"},
        {"type": "text", "text": "Hello there, how can I help?"},
    ]
    assert plain.stop_reason == "end_turn" and plain.id.startswith("msg_")
    assert plain.content[0].signature and final.content[0].signature


def test_messages_tool_round_trip_replays_the_signed_thinking(server: Any) -> None:
    client = ant(server)
    asked = [{"role": "user", "content": "weather in Paris?"}]
    plain, _ = _both_ways(client, model="m", max_tokens=200, messages=asked, tools=ANTHROPIC_TOOLS)
    assert plain.stop_reason == "tool_use"
    use = plain.content[-1]
    assert use.type == "tool_use" and use.name == "get_weather" and use.input == {"city": "Paris"}
    turn = [
        *asked,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in plain.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]},
    ]
    answer, _ = _both_ways(client, model="m", max_tokens=200, messages=turn, tools=ANTHROPIC_TOOLS)
    assert answer.content[-1].text == "It is sunny in Paris." and answer.stop_reason == "end_turn"
    # The signature carries the reasoning: a thinking text changed by the client does not reach
    # the prompt, so the prompt (and its count) is the same as with the original text.
    tampered = json.loads(json.dumps(turn))
    tampered[1]["content"][0]["thinking"] = "something else entirely, and much longer than before"
    same = client.messages.count_tokens(model="m", messages=turn, tools=ANTHROPIC_TOOLS).input_tokens
    assert (
        client.messages.count_tokens(model="m", messages=tampered, tools=ANTHROPIC_TOOLS).input_tokens == same
    )
    # A signature we did not seal drops the block: the prompt gets shorter.
    forged = json.loads(json.dumps(turn))
    forged[1]["content"][0]["signature"] = "not ours"
    assert client.messages.count_tokens(model="m", messages=forged, tools=ANTHROPIC_TOOLS).input_tokens < same


def test_messages_parallel_tool_use(server: Any) -> None:
    plain, _ = _both_ways(
        ant(server),
        model="m",
        max_tokens=200,
        messages=[{"role": "user", "content": "both"}],
        tools=ANTHROPIC_TOOLS,
    )
    assert [(b.name, b.input) for b in plain.content if b.type == "tool_use"] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"zone": "CET"}),
    ]


def test_messages_count_tokens_and_max_tokens(server: Any) -> None:
    client = ant(server)
    count = client.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}])
    plain = client.messages.create(model="m", max_tokens=200, messages=[{"role": "user", "content": "hi"}])
    assert count.input_tokens == plain.usage.input_tokens > 0
    cut, _ = _both_ways(client, model="m", max_tokens=3, messages=[{"role": "user", "content": "short"}])
    assert cut.stop_reason == "max_tokens" and cut.usage.output_tokens == 3


@pytest.mark.parametrize("stream", [False, True])
def test_over_long_prompt_is_anthropics_400(server: Any, stream: bool) -> None:
    """What Claude Code compacts on: HTTP 400, invalid_request_error, 'prompt is too long: N tokens > M maximum'."""
    big = "word " * 600
    body = {"model": "m", "max_tokens": 10, "stream": stream, "messages": [{"role": "user", "content": big}]}
    resp = httpx.post(server.v1 + "/messages", json=body, timeout=20)
    assert resp.status_code == 400
    error = resp.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert error["error"]["message"].startswith("prompt is too long: ")
    assert error["error"]["message"].endswith(" tokens > 400 maximum")
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        ant(server).messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": big}])
    chat = httpx.post(
        server.v1 + "/chat/completions",
        json={"model": "m", "stream": stream, "messages": [{"role": "user", "content": big}]},
        timeout=20,
    )
    assert chat.status_code == 400 and chat.json()["error"]["code"] == "context_length_exceeded"


def test_long_prefill_gets_pings_before_the_first_block(server: Any) -> None:
    body = {"model": "m", "max_tokens": 50, "stream": True, "messages": [{"role": "user", "content": "slow"}]}
    raw = httpx.post(server.v1 + "/messages", json=body, timeout=20).text
    kinds = [line.removeprefix("event: ") for line in raw.splitlines() if line.startswith("event: ")]
    assert kinds[0] == "message_start" and "ping" in kinds[: kinds.index("content_block_start")]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    with ant(server).messages.stream(
        model="m", max_tokens=50, messages=[{"role": "user", "content": "slow"}]
    ) as s:
        assert s.get_final_message().content[-1].text == "late"


def test_stop_sequence_is_reported_and_a_profile_stop_is_end_turn(server: Any) -> None:
    client = ant(server)
    counted = [{"role": "user", "content": "count"}]
    plain, final = _both_ways(
        client, model="m", max_tokens=50, messages=counted, stop_sequences=["STOP", "zzz"]
    )
    for message in (plain, final):
        assert message.content[-1].text == "one, two, three, "
        assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "STOP")
    # The model's own end-of-turn markup (the profile's stop string) ends an ordinary turn.
    ended, _ = _both_ways(client, model="m", max_tokens=50, messages=[{"role": "user", "content": "turn"}])
    assert ended.content[-1].text == "done"
    assert (ended.stop_reason, ended.stop_sequence) == ("end_turn", None)
    chat = oai(server).chat.completions.create(model="m", messages=counted, stop="STOP")
    assert chat.choices[0].message.content == "one, two, three, " and chat.choices[0].finish_reason == "stop"
