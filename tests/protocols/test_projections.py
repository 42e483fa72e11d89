"""One log, three protocols: the Responses, Chat Completions and Messages views of one run agree.

Why: a Chat Completions or Messages client must see exactly what a Responses client sees
(ARCHITECTURE invariant 3), and each client's own accumulator must arrive at the body the
server would have returned without streaming (invariant 1, per protocol). Hypothesis picks
engine outputs (text, reasoning markup, whole, broken and interleaved tool calls), chunkings,
endings (stop, length, failure) and the anyio backend; the oracles are the real SDKs'
accumulators.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.adapters.requests import (
    NormalizeOptions,
    RequestLimits,
    decode_messages_request,
    normalize_messages,
)
from accord.engine.scripted import Fail, Rule
from tests.oracle import check_stream
from tests.protocols.clients import chat_sdk_final, check_chat, check_messages, messages_sdk_final
from tests.protocols.runs import SEALER, Projected, project, run_rule

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>'
pieces = st.sampled_from(
    [
        "<think>",
        "</think>",
        "Hello",
        " ",
        "\n",
        "wörld",
        "😀",
        "<",
        CALL,
        '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Ro',
        '<tool_call>{"name": "nope", "arguments": {}}</tool_call>',
    ]
)


@st.composite
def rules(draw: st.DrawFn, *, failures: bool = False) -> Rule:
    text = "".join(draw(st.lists(pieces, max_size=12)))
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=14)))
    bounds = [0, *cuts, len(text)]
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    fail = None
    if failures:
        kind = draw(st.sampled_from(["engine_error", "context_length_exceeded"]))
        fail = Fail(after_chunks=draw(st.integers(0, len(chunks))), kind=kind)
    finish = draw(st.sampled_from(["stop", "stop", "length"]))
    return Rule(output=text, chunks=chunks, fail=fail, finish=finish, cached_tokens=draw(st.integers(0, 3)))


def _responses_view(final: dict[str, Any]) -> tuple[str, str, list[tuple[str, str, str]]]:
    text = reasoning = ""
    calls = []
    for item in final["output"]:
        if item["type"] == "message":
            text += "".join(p["text"] for p in item["content"])
        elif item["type"] == "reasoning":
            reasoning += "".join(p["text"] for p in item["content"])
        else:
            calls.append((item["call_id"], item["name"], item["arguments"]))
    return text, reasoning, calls


def _chat_stream_view(chunks: list[dict[str, Any]]) -> tuple[str, str, list[tuple[str, str, str]]]:
    """An independent client fold of the chunks: by index, every string appended."""
    text = reasoning = ""
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        for choice in chunk.get("choices", []):
            delta = choice["delta"]
            text += delta.get("content", "")
            reasoning += delta.get("reasoning_content", "")
            for call in delta.get("tool_calls", []):
                entry = calls.setdefault(call["index"], ["", "", ""])
                entry[0] += call.get("id", "")
                entry[1] += call.get("function", {}).get("name", "")
                entry[2] += call.get("function", {}).get("arguments", "")
    return text, reasoning, [(c[0], c[1], c[2]) for _, c in sorted(calls.items())]


def _messages_stream_view(events: list[dict[str, Any]]) -> tuple[str, str, list[tuple[str, str, str]]]:
    text = reasoning = ""
    calls: dict[int, list[str]] = {}
    for event in events:
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
            block = event["content_block"]
            calls[event["index"]] = [block["id"], block["name"], ""]
        elif event["type"] == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "text_delta":
                text += delta["text"]
            elif delta["type"] == "thinking_delta":
                reasoning += delta["thinking"]
            elif delta["type"] == "input_json_delta":
                calls[event["index"]][2] += delta["partial_json"]
    return text, reasoning, [(c[0], c[1], c[2]) for _, c in sorted(calls.items())]


def _check_all(run: Projected, *, include_usage: bool) -> None:
    final = check_stream(run.responses)
    check_chat(run.chat, include_usage=include_usage)
    check_messages(run.messages)
    view = _responses_view(final)
    assert _chat_stream_view(run.chat) == view
    text, reasoning, calls = _messages_stream_view(run.messages)
    assert (text, reasoning) == view[:2]
    # A Messages client parses tool input as it streams, so argument text that stopped being
    # JSON is held back: an unfinished call's input is a prefix of its arguments there.
    statuses = [item["status"] for item in final["output"] if item["type"] == "function_call"]
    assert len(calls) == len(view[2]) == len(statuses)
    for (cid, name, args), (rid, rname, rargs), status in zip(calls, view[2], statuses, strict=True):
        assert (cid, name) == (rid, rname)
        assert args == rargs if status == "completed" else rargs.startswith(args)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule=rules(), backend=st.sampled_from(["asyncio", "trio"]), include_usage=st.booleans())
def test_three_projections_of_one_run_carry_the_same_text_reasoning_and_calls(
    rule: Rule, backend: str, include_usage: bool
) -> None:
    """Streams and non-streamed bodies of all three protocols hold the same items, on both backends."""
    run = run_rule(rule, include_usage=include_usage, backend=backend)
    _check_all(run, include_usage=include_usage)
    text, reasoning, calls = _responses_view(run.responses[-1]["response"])
    message = run.chat_body()["choices"][0]["message"]
    assert (message["content"] or "", message.get("reasoning_content", "")) == (text, reasoning)
    assert [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls", [])
    ] == calls
    blocks = run.message_body()["content"]
    assert "".join(b["text"] for b in blocks if b["type"] == "text") == text
    assert "".join(b["thinking"] for b in blocks if b["type"] == "thinking") == reasoning
    assert [b["id"] for b in blocks if b["type"] == "tool_use"] == [c[0] for c in calls]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule=rules())
def test_openai_chat_accumulator_arrives_at_the_chat_completion_body(rule: Rule) -> None:
    """openai's ChatCompletionStreamState over the chunks gives the non-streamed body, field by field."""
    run = run_rule(rule, include_usage=True)
    final = chat_sdk_final(run.chat)
    body = run.chat_body()
    assert (final.id, final.model, final.created) == (body["id"], body["model"], body["created"])
    assert final.usage.model_dump(exclude_none=True) == body["usage"]
    choice, expected = final.choices[0], body["choices"][0]
    assert choice.finish_reason == expected["finish_reason"]
    message = expected["message"]
    assert choice.message.content == message["content"]
    assert choice.message.refusal == message["refusal"]
    assert getattr(choice.message, "reasoning_content", None) == message.get("reasoning_content")
    calls = [(c.id, c.type, c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
    assert calls == [
        (c["id"], c["type"], c["function"]["name"], c["function"]["arguments"])
        for c in message.get("tool_calls", [])
    ]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule=rules())
def test_anthropic_accumulator_arrives_at_the_message_body(rule: Rule) -> None:
    """anthropic's accumulate_event over the events gives the non-streamed message, block by block.

    A call that never completed has arguments that are only a JSON prefix: the SDK reads its
    partial input, the body (which has no partial JSON reader) an empty one, so only completed
    calls are compared on ``input``.
    """
    run = run_rule(rule)
    final = messages_sdk_final(run.messages).model_dump(exclude_none=True)
    body = run.message_body()
    statuses = [item.status for item in run.snapshot.output()]
    for block, status in zip(final["content"], statuses, strict=True):
        block.pop("parsed_output", None)
        if block["type"] == "tool_use" and status != "completed":
            block["input"] = {}
    assert final["content"] == body["content"]
    for key in ("id", "model", "role", "stop_reason", "usage", "type"):
        assert final[key] == body[key], key


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule=rules(failures=True))
def test_a_failure_ends_each_stream_with_its_error_after_the_same_content(rule: Rule) -> None:
    """Chat ends with its error object, Messages with its error event; what came before agrees."""
    run = run_rule(rule)
    _check_all(run, include_usage=True)
    if run.snapshot.status == "failed":
        assert set(run.chat[-1]) == {"error"} and run.chat[-1]["error"]["code"] == run.snapshot.error["code"]
        assert run.messages[-1]["type"] == "error"
        if run.snapshot.error["code"] == "context_length_exceeded":
            assert run.messages[-1]["error"]["message"].startswith("prompt is too long: ")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule=rules(failures=True))
def test_projecting_with_the_final_snapshot_gives_the_same_events(rule: Rule) -> None:
    """The edge may fold a whole batch before projecting it: the projections read only what is final."""
    run = run_rule(rule)
    assert project(run.log, include_usage=True, snapshot=run.snapshot) == (run.chat, run.messages)


def test_thinking_is_signed_and_the_tool_use_input_is_the_parsed_arguments() -> None:
    """A thinking block carries the sealed reasoning; tool_use input is the arguments as an object."""
    run = run_rule(Rule(output="<think>plan it</think>" + CALL, chunk_chars=3))
    blocks = run.message_body()["content"]
    assert [b["type"] for b in blocks] == ["thinking", "tool_use"]
    assert blocks[0]["thinking"] == "plan it" and blocks[0]["signature"]
    assert blocks[1]["input"] == {"city": "Paris", "days": 2}
    assert run.message_body()["stop_reason"] == "tool_use"
    assert json.loads(run.chat_body()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]) == {
        "city": "Paris",
        "days": 2,
    }
    assert run.chat_body()["choices"][0]["finish_reason"] == "tool_calls"
    signatures = [
        e
        for e in run.messages
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "signature_delta"
    ]
    assert [e["delta"]["signature"] for e in signatures] == [blocks[0]["signature"]]


def test_arguments_that_stop_being_json_are_held_back_from_messages_clients() -> None:
    """Found by the accumulator property: a raw newline in a string is streamed by the tool parser
    before the call is abandoned; sent on, it would make anthropic's accumulator raise mid-stream."""
    run = run_rule(
        Rule(
            output='<tool_call>{"name": "get_weather", "arguments": {"city": "Ro\nme"}}</tool_call>',
            chunk_chars=3,
        )
    )
    assert run.snapshot.output()[0].status == "incomplete"
    sent = "".join(
        e["delta"]["partial_json"]
        for e in run.messages
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    )
    assert sent == '{"city": "Ro'
    final = messages_sdk_final(run.messages)
    assert final.content[0].type == "tool_use" and final.content[0].input == {}


def test_a_stateless_client_replaying_our_thinking_block_renders_the_exact_reasoning() -> None:
    """The body's thinking block, handed back as a Claude Code turn, is the same reasoning in the prompt."""

    run = run_rule(Rule(output="<think>step one\nstep two</think>" + CALL, chunk_chars=5))
    body = run.message_body()
    tool_use = body["content"][1]
    follow_up = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": body["content"]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool_use["id"], "content": "sunny"}],
            },
        ],
    }
    request = decode_messages_request(json.dumps(follow_up).encode(), RequestLimits())
    conversation = normalize_messages(request, options=NormalizeOptions(sealer=SEALER))
    assistant = next(m for m in conversation.messages if m.role == "assistant")
    assert assistant.reasoning == "step one\nstep two"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in assistant.tool_calls] == [
        (tool_use["id"], "get_weather", {"city": "Paris", "days": 2})
    ]
