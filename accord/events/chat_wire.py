"""Chat Completions chunks (openai-python ``types/chat/chat_completion_chunk.py``): a projection
of the response log, and the ``chat.completion`` body as a rendering of its fold.

Theory of operation: one response event, plus the Snapshot after it was folded, gives the
chunks for that event, exactly as :func:`accord.events.wire.project` gives the Responses
events. All output items of the log land in the one choice: text items' text in
``content``, reasoning in ``reasoning_content`` (the field vLLM, SGLang and DeepSeek use),
each call in ``tool_calls`` at its own ``index``, counted in the order the calls opened.
A chunk carries only what is new: ``role`` once in the first chunk, a call's ``id``, ``type``
and ``name`` once in the chunk that opens it, since a client accumulates every string it
is sent (openai's ``accumulate_delta`` concatenates them).

The projection reads from the Snapshot only what the event has made final (an item's kind
at its delta, the usage and status at the terminal event), so a Snapshot taken later in the
same log gives the same chunks: the edge may project a batch of events after folding all
of them. The ``[DONE]`` line and the keepalive comment are framing, below.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from accord.events.items import (
    CustomToolCallItem,
    FunctionCallItem,
    MessageItem,
    OutputText,
    ReasoningItem,
    Usage,
)
from accord.events.response import (
    ArgumentsAppended,
    Cancelled,
    Completed,
    Failed,
    Incomplete,
    ItemAdded,
    ItemClosed,
    Opened,
    PartAdded,
    ResponseEvent,
    Snapshot,
    TextAppended,
)

FinishReason = Literal["stop", "length", "tool_calls"]


class _Out(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    pass


class FunctionDelta(_Out, frozen=True, kw_only=True):
    name: str | None = None
    arguments: str | None = None


class CustomDelta(_Out, frozen=True, kw_only=True):
    name: str | None = None
    input: str | None = None


class ToolCallDelta(_Out, frozen=True, kw_only=True):
    index: int
    id: str | None = None
    type: Literal["function", "custom"] | None = None
    function: FunctionDelta | None = None
    custom: CustomDelta | None = None


class Delta(_Out, frozen=True, kw_only=True):
    role: Literal["assistant"] | None = None
    content: str | None = None
    reasoning_content: str | None = None
    refusal: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(msgspec.Struct, frozen=True, kw_only=True):
    index: int = 0
    delta: Delta
    #: Always on the wire, ``null`` until the last choice chunk.
    finish_reason: FinishReason | None = None
    logprobs: None = None


class ChatChunk(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    #: ``null`` on every chunk but the last when the client asked for usage (as OpenAI sends it).
    usage: dict[str, Any] | None = None


class ChatError(msgspec.Struct, frozen=True, kw_only=True):
    """A failure after the stream opened: the object openai's stream reader raises on (``error``)."""

    error: dict[str, Any]


ChatOut = ChatChunk | ChatError

#: HTTP status and error type of each failure code, for a failure before the stream opens.
ERROR_STATUS: dict[str, tuple[int, str]] = {
    "context_length_exceeded": (400, "invalid_request_error"),
    "engine_error": (500, "server_error"),
    "upstream_error": (502, "server_error"),
    "internal_error": (500, "server_error"),
    "cancelled": (500, "server_error"),
}


def chat_usage(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.input_tokens_details.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.output_tokens_details.reasoning_tokens},
    }


def _qualified(item: FunctionCallItem | CustomToolCallItem) -> str:
    return f"{item.namespace}.{item.name}" if item.namespace else item.name


def finish_reason(snapshot: Snapshot) -> FinishReason:
    """``length`` when the budget ran out, ``tool_calls`` when a call completed, else ``stop``."""
    if snapshot.status == "incomplete":
        return "length"
    for state in snapshot.items:
        if isinstance(state.first, FunctionCallItem | CustomToolCallItem) and state.status == "completed":
            return "tool_calls"
    return "stop"


def error_object(code: str, message: str) -> dict[str, Any]:
    _, kind = ERROR_STATUS.get(code, (500, "server_error"))
    return {"message": message, "type": kind, "param": None, "code": code}


class ChatProjection:
    """Sans-IO: ``feed(event, snapshot) -> chunks``. Its one piece of state is the call index."""

    def __init__(self, *, include_usage: bool = False) -> None:
        self.include_usage = include_usage
        #: output_index of each call item -> its ``index`` in ``tool_calls``.
        self._call_index: dict[int, int] = {}

    def _chunk(self, snapshot: Snapshot, delta: Delta, reason: FinishReason | None = None) -> ChatChunk:
        return ChatChunk(
            id=snapshot.response_id,
            created=snapshot.created_at,
            model=snapshot.model,
            choices=[ChunkChoice(delta=delta, finish_reason=reason)],
        )

    def feed(self, event: ResponseEvent, snapshot: Snapshot) -> list[ChatOut]:
        match event:
            case TextAppended():
                kind = snapshot.items[event.output_index].parts[event.content_index].kind
                if kind == "output_text":
                    return [self._chunk(snapshot, Delta(content=event.delta))]
                if kind == "refusal":
                    return [self._chunk(snapshot, Delta(refusal=event.delta))]
                return [self._chunk(snapshot, Delta(reasoning_content=event.delta))]
            case ArgumentsAppended():
                index = self._call_index[event.output_index]
                if isinstance(snapshot.items[event.output_index].first, CustomToolCallItem):
                    call = ToolCallDelta(index=index, custom=CustomDelta(input=event.delta))
                else:
                    call = ToolCallDelta(index=index, function=FunctionDelta(arguments=event.delta))
                return [self._chunk(snapshot, Delta(tool_calls=[call]))]
            case Opened():
                return [self._chunk(snapshot, Delta(role="assistant"))]
            case ItemAdded():
                item = event.item
                if not isinstance(item, FunctionCallItem | CustomToolCallItem):
                    return []
                index = self._call_index[event.output_index] = len(self._call_index)
                if isinstance(item, CustomToolCallItem):
                    call = ToolCallDelta(
                        index=index, id=item.call_id, type="custom", custom=CustomDelta(name=_qualified(item))
                    )
                else:
                    call = ToolCallDelta(
                        index=index,
                        id=item.call_id,
                        type="function",
                        function=FunctionDelta(name=_qualified(item), arguments=""),
                    )
                return [self._chunk(snapshot, Delta(tool_calls=[call]))]
            case PartAdded() | ItemClosed():
                return []
            case Completed() | Incomplete():
                out: list[ChatOut] = [self._chunk(snapshot, Delta(), finish_reason(snapshot))]
                if self.include_usage:
                    out.append(
                        ChatChunk(
                            id=snapshot.response_id,
                            created=snapshot.created_at,
                            model=snapshot.model,
                            choices=[],
                            usage=chat_usage(snapshot.usage),
                        )
                    )
                return out
            case Failed():
                return [ChatError(error=error_object(event.code, event.message))]
            case Cancelled():
                return [ChatError(error=error_object("cancelled", "The response was cancelled."))]
        raise TypeError(f"cannot project {event!r}")


def chat_completion(snapshot: Snapshot) -> dict[str, Any]:
    """The non-streamed ``chat.completion`` body: the fold, rendered."""
    content: list[str] = []
    reasoning: list[str] = []
    refusal: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in snapshot.output():
        if isinstance(item, MessageItem):
            for part in item.content:
                if isinstance(part, OutputText):
                    content.append(part.text)
                else:
                    refusal.append(part.refusal)
        elif isinstance(item, ReasoningItem):
            reasoning.extend(part.text for part in item.content)
        elif isinstance(item, FunctionCallItem):
            calls.append(
                {
                    "id": item.call_id,
                    "type": "function",
                    "function": {"name": _qualified(item), "arguments": item.arguments},
                }
            )
        else:
            calls.append(
                {
                    "id": item.call_id,
                    "type": "custom",
                    "custom": {"name": _qualified(item), "input": item.input},
                }
            )
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(content) if content else None,
        "refusal": "".join(refusal) if refusal else None,
    }
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    return {
        "id": snapshot.response_id,
        "object": "chat.completion",
        "created": snapshot.created_at,
        "model": snapshot.model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason(snapshot), "logprobs": None}
        ],
        "usage": chat_usage(snapshot.usage),
    }


def chat_failure(snapshot: Snapshot) -> tuple[int, dict[str, Any]]:
    """A run that failed before anything was sent: the HTTP status and OpenAI's error body."""
    error = snapshot.error or {"code": "cancelled", "message": "The response was cancelled."}
    code, message = str(error["code"]), str(error["message"])
    status, _ = ERROR_STATUS.get(code, (500, "server_error"))
    return status, {"error": error_object(code, message)}


# --- framing ---------------------------------------------------------------------------------

_json = msgspec.json.Encoder()
DONE_FRAME = b"data: [DONE]\n\n"
#: Chat Completions has no keepalive event; an SSE comment is skipped by every client's parser.
KEEPALIVE_FRAME = b": keepalive\n\n"


def chat_frame(out: ChatOut) -> bytes:
    """``data: <json>\\n\\n``: Chat Completions frames carry no ``event:`` line."""
    return b"data: " + _json.encode(out) + b"\n\n"
