"""What a Chat Completions or Messages client arrives at, and the grammar each stream must keep.

``chat_sdk_final`` runs openai's own ``ChatCompletionStreamState`` and ``messages_sdk_final``
anthropic's own ``accumulate_event`` over the projected events, each parsed into the SDK's
types the way the SDK's stream reader parses them, so anything either SDK would reject or
misread shows up here. ``check_chat`` and ``check_messages`` check the order rules the
accumulators take for granted (``role`` once, a call's id once at its first ``index``, the
Messages block grammar, one ending).
"""

from __future__ import annotations

from typing import Any, cast

from anthropic._models import construct_type as anthropic_construct
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import RawMessageStreamEvent
from openai import LengthFinishReasonError
from openai._models import construct_type as openai_construct
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk


def chat_sdk_final(chunks: list[dict[str, Any]]) -> Any:
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for data in chunks:
        chunk = openai_construct(type_=ChatCompletionChunk, value=data)
        state.handle_chunk(cast(ChatCompletionChunk, chunk))
    try:
        return state.get_final_completion()
    except LengthFinishReasonError as exc:
        # The helper refuses to parse a truncated completion; what it accumulated is on the error.
        return exc.completion


def messages_sdk_final(events: list[dict[str, Any]]) -> Any:
    snapshot: Any = None
    buffers: dict[int, bytes] = {}
    for data in events:
        if data["type"] == "ping":
            continue  # the SDK's stream reader drops pings before accumulating
        event = anthropic_construct(type_=cast(Any, RawMessageStreamEvent), value=data)
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=buffers)
    return snapshot


def check_chat(chunks: list[dict[str, Any]], *, include_usage: bool) -> None:
    """One id throughout, role first and once, call indices 0,1,2.. each opened once, one ending."""
    if chunks and "error" in chunks[-1]:
        assert set(chunks[-1]) == {"error"} and chunks[-1]["error"]["message"]
        chunks = chunks[:-1]
        include_usage = False
        ending = None
    else:
        ending = -2 if include_usage else -1
    ids = {c["id"] for c in chunks}
    assert len(ids) <= 1, "every chunk carries the response's id"
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    opened: list[int] = []
    finishes = []
    for n, chunk in enumerate(chunks):
        for choice in chunk["choices"]:
            delta = choice["delta"]
            assert n == 0 or "role" not in delta, "role is sent once"
            for call in delta.get("tool_calls", []):
                if "id" in call:
                    assert call["index"] == len(opened), "calls open at index 0, 1, 2 ..."
                    opened.append(call["index"])
                else:
                    assert call["index"] in opened, "a delta for a call that never opened"
            if choice["finish_reason"] is not None:
                finishes.append(n)
    if ending is not None:
        assert finishes == [len(chunks) + ending], "one finish_reason, on the last choice chunk"
        if include_usage:
            assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] >= 0
    else:
        assert finishes == []


def check_messages(events: list[dict[str, Any]]) -> None:
    """message_start (block_start delta* block_stop)* message_delta message_stop, or ... error."""
    kinds = [e["type"] for e in events if e["type"] != "ping"]
    assert kinds[0] == "message_start"
    assert kinds.count("message_start") == 1
    failed = kinds[-1] == "error"
    if failed:
        assert "message_delta" not in kinds and "message_stop" not in kinds
    else:
        assert kinds[-2:] == ["message_delta", "message_stop"] and kinds.count("message_delta") == 1
    open_block: int | None = None
    started = 0
    for event in events:
        kind = event["type"]
        if kind == "content_block_start":
            assert open_block is None, "blocks do not nest"
            assert event["index"] == started, "block indices run 0, 1, 2 ..."
            open_block, started = event["index"], started + 1
        elif kind == "content_block_delta":
            assert event["index"] == open_block
        elif kind == "content_block_stop":
            assert event["index"] == open_block
            open_block = None
        elif kind == "message_delta":
            assert open_block is None, "every block stops before message_delta"
    if failed:
        assert events[-1]["error"]["type"] and events[-1]["error"]["message"]
