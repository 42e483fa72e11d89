"""Anthropic Messages stream events (anthropic-python ``types/raw_*_event.py``): a projection of
the response log, and the ``message`` body as a rendering of its fold.

Theory of operation: every output item of the log is one content block at the same index
(a message is a ``text`` block, reasoning a ``thinking`` block, a call a ``tool_use``
block), so a block's index is its item's ``output_index`` and needs no bookkeeping. The
grammar Anthropic streams is

    message_start (content_block_start delta* content_block_stop)* message_delta message_stop

with ``ping`` allowed anywhere as the keepalive, and a failure ending the stream with one
``error`` event instead of ``message_delta``/``message_stop``. A thinking block's
``signature_delta`` (the sealed reasoning, SPEC I4) goes just before its
``content_block_stop``, read from the ``ItemClosed`` event. Blocks still open when the
response ends are stopped before ``message_delta``, as the Responses projection closes
their items. Like the Chat Completions projection, it reads from the Snapshot only what the
event has made final, so a later Snapshot of the same log gives the same events.

Usage: Anthropic's ``input_tokens`` does not include cache reads (its total is the sum of
``input_tokens``, ``cache_read_input_tokens`` and ``cache_creation_input_tokens``), so the
cached part of our prompt count moves to ``cache_read_input_tokens``. The prompt is only
counted once the engine has seen it, so ``message_start`` carries 0 and ``message_delta``
the counts (the SDK's accumulator takes the later, cumulative value).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import msgspec

from accord.events._jsonprefix import JsonPrefix
from accord.events.items import (
    CustomToolCallItem,
    FunctionCallItem,
    MessageItem,
    OutputItem,
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

StopReason = Literal["end_turn", "max_tokens", "tool_use", "stop_sequence"]


class MessagesEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of the closed union of Messages stream events."""


class MessageStart(MessagesEvent, frozen=True, tag="message_start"):
    message: dict[str, Any]


class ContentBlockStart(MessagesEvent, frozen=True, tag="content_block_start"):
    index: int
    content_block: dict[str, Any]


class ContentBlockDelta(MessagesEvent, frozen=True, tag="content_block_delta"):
    index: int
    delta: dict[str, Any]


class ContentBlockStop(MessagesEvent, frozen=True, tag="content_block_stop"):
    index: int


class MessageDelta(MessagesEvent, frozen=True, tag="message_delta"):
    delta: dict[str, Any]
    usage: dict[str, Any]


class MessageStop(MessagesEvent, frozen=True, tag="message_stop"):
    pass


class Ping(MessagesEvent, frozen=True, tag="ping"):
    pass


class ErrorEvent(MessagesEvent, frozen=True, tag="error"):
    error: dict[str, Any]


AnyMessagesEvent = (
    MessageStart
    | ContentBlockStart
    | ContentBlockDelta
    | ContentBlockStop
    | MessageDelta
    | MessageStop
    | Ping
    | ErrorEvent
)

#: Anthropic's error ``type`` for each HTTP status an error can carry.
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    529: "overloaded_error",
}
#: HTTP status of each failure code, for a failure before the stream opens.
FAILURE_STATUS: dict[str, int] = {
    "context_length_exceeded": 400,
    "engine_error": 500,
    "upstream_error": 502,
    "internal_error": 500,
    "cancelled": 500,
}


def error_body(message: str, *, status: int) -> dict[str, Any]:
    """Anthropic's error shape, as an HTTP body and inside the ``error`` event."""
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


_INTEGER = re.compile(r"\d+")


def prompt_too_long(prompt_tokens: int, engine_message: str) -> str:
    """The over-long-prompt text in the words of Anthropic's API, which Claude Code reacts to.

    Anthropic answers an over-long prompt with a 400 ``invalid_request_error`` whose message is
    ``prompt is too long: 203284 tokens > 200000 maximum``, and Claude Code compacts the
    conversation on that message (as reported in anthropics/claude-code issues #14195 and
    #59696, whose logs quote the API's body verbatim). The maximum is the other number in
    the engine's own message ("maximum context length is 4096 tokens"); an engine that does
    not say it is taken to allow one token less than the prompt has.
    """
    numbers = [int(n) for n in _INTEGER.findall(engine_message)]
    others = [n for n in numbers if n != prompt_tokens]
    maximum = others[0] if others else max(prompt_tokens - 1, 0)
    return f"prompt is too long: {prompt_tokens} tokens > {maximum} maximum"


def failure_message(code: str, message: str, usage: Usage | None) -> str:
    if code == "context_length_exceeded":
        return prompt_too_long(usage.input_tokens if usage is not None else 0, message)
    return message


def messages_usage(usage: Usage | None) -> dict[str, Any]:
    if usage is None:
        return {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        }
    details = usage.input_tokens_details
    return {
        "input_tokens": usage.input_tokens - details.cached_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": details.cached_tokens,
        "cache_creation_input_tokens": details.cache_write_tokens,
    }


def matched_stop(snapshot: Snapshot, stops: tuple[str, ...]) -> str | None:
    """The client's stop sequence that ended the text; a model profile's own stop strings
    (end-of-turn markup) are an ordinary ``end_turn``."""
    return snapshot.stop_sequence if snapshot.stop_sequence in stops else None


def stop_reason(snapshot: Snapshot, stops: tuple[str, ...] = ()) -> StopReason:
    if snapshot.status == "incomplete":
        return "max_tokens"
    if matched_stop(snapshot, stops) is not None:
        return "stop_sequence"
    for state in snapshot.items:
        if isinstance(state.first, FunctionCallItem | CustomToolCallItem) and state.status == "completed":
            return "tool_use"
    return "end_turn"


def _qualified(item: FunctionCallItem | CustomToolCallItem) -> str:
    return f"{item.namespace}.{item.name}" if item.namespace else item.name


def _first_block(item: OutputItem) -> dict[str, Any]:
    if isinstance(item, MessageItem):
        return {"type": "text", "text": ""}
    if isinstance(item, ReasoningItem):
        return {"type": "thinking", "thinking": "", "signature": ""}
    return {"type": "tool_use", "id": item.call_id, "name": _qualified(item), "input": {}}


def _whole_object(arguments: str) -> bool:
    """The arguments are one complete JSON object that a Messages client can parse too."""
    scanner = JsonPrefix()
    return scanner.feed(arguments) and scanner.complete


def _tool_input(arguments: str) -> dict[str, Any]:
    """A call's input object; arguments that are not (yet) one JSON object give ``{}``."""
    if not _whole_object(arguments):
        return {}
    value = json.loads(arguments)
    return value if isinstance(value, dict) else {}


class MessagesProjection:
    """Sans-IO: ``feed(event, snapshot) -> Messages stream events``."""

    def __init__(self, stops: tuple[str, ...] = ()) -> None:
        #: The request's ``stop_sequences`` (reported when one ends the text).
        self._stops = stops
        self._open: set[int] = set()
        #: Per function call: its arguments checked so far, and how many characters went out.
        self._scanners: dict[int, JsonPrefix] = {}
        self._sent: dict[int, int] = {}

    def feed(self, event: ResponseEvent, snapshot: Snapshot) -> list[MessagesEvent]:
        match event:
            case TextAppended():
                kind = snapshot.items[event.output_index].parts[event.content_index].kind
                if kind == "reasoning_text":
                    delta = {"type": "thinking_delta", "thinking": event.delta}
                else:
                    delta = {"type": "text_delta", "text": event.delta}
                return [ContentBlockDelta(index=event.output_index, delta=delta)]
            case ArgumentsAppended():
                if isinstance(snapshot.items[event.output_index].first, CustomToolCallItem):
                    return []  # a custom tool's input is one string, sent whole when the call closes
                return self._arguments(event.output_index, event.delta)
            case Opened():
                return [MessageStart(message=_message(snapshot, content=[], stop=None, usage=None))]
            case ItemAdded():
                self._open.add(event.output_index)
                if isinstance(event.item, FunctionCallItem):
                    self._scanners[event.output_index] = JsonPrefix()
                    self._sent[event.output_index] = 0
                return [ContentBlockStart(index=event.output_index, content_block=_first_block(event.item))]
            case PartAdded():
                return []
            case ItemClosed():
                return self._stop(event, snapshot)
            case Completed() | Incomplete():
                out: list[MessagesEvent] = [ContentBlockStop(index=i) for i in sorted(self._open)]
                self._open.clear()
                ending: dict[str, Any] = {
                    "stop_reason": stop_reason(snapshot, self._stops),
                    "stop_sequence": matched_stop(snapshot, self._stops),
                }
                out.append(MessageDelta(delta=ending, usage=messages_usage(snapshot.usage)))
                out.append(MessageStop())
                return out
            case Failed():
                message = failure_message(event.code, event.message, event.usage)
                return [
                    ErrorEvent(error=error_body(message, status=FAILURE_STATUS.get(event.code, 500))["error"])
                ]
            case Cancelled():
                return [ErrorEvent(error=error_body("The response was cancelled.", status=500)["error"])]
        raise TypeError(f"cannot project {event!r}")

    def _arguments(self, index: int, delta: str) -> list[MessagesEvent]:
        """Argument text goes out only while it stays the start of a JSON object (``_jsonprefix``)."""
        scanner = self._scanners[index]
        if scanner.broken or not scanner.feed(delta):
            return []
        self._sent[index] += len(delta)
        return [ContentBlockDelta(index=index, delta={"type": "input_json_delta", "partial_json": delta})]

    def _stop(self, event: ItemClosed, snapshot: Snapshot) -> list[MessagesEvent]:
        index = event.output_index
        self._open.discard(index)
        first = snapshot.items[index].first
        out: list[MessagesEvent] = []
        if isinstance(first, ReasoningItem) and event.encrypted_content:
            out.append(
                ContentBlockDelta(
                    index=index, delta={"type": "signature_delta", "signature": event.encrypted_content}
                )
            )
        elif index in self._scanners and self._scanners[index].broken and event.status == "completed":
            # Held back while it did not look like JSON; the whole call is, so the rest goes now.
            arguments = snapshot.arguments(index)
            if _whole_object(arguments):
                rest = arguments[self._sent[index] :]
                out.append(
                    ContentBlockDelta(index=index, delta={"type": "input_json_delta", "partial_json": rest})
                )
        elif isinstance(first, CustomToolCallItem):
            whole = json.dumps({"input": snapshot.arguments(index)}, ensure_ascii=False)
            out.append(
                ContentBlockDelta(index=index, delta={"type": "input_json_delta", "partial_json": whole})
            )
        out.append(ContentBlockStop(index=index))
        return out


def _block(item: OutputItem) -> dict[str, Any]:
    if isinstance(item, MessageItem):
        text = "".join(p.text if isinstance(p, OutputText) else p.refusal for p in item.content)
        return {"type": "text", "text": text}
    if isinstance(item, ReasoningItem):
        thinking = "".join(p.text for p in item.content)
        return {"type": "thinking", "thinking": thinking, "signature": item.encrypted_content or ""}
    if isinstance(item, FunctionCallItem):
        return {
            "type": "tool_use",
            "id": item.call_id,
            "name": _qualified(item),
            "input": _tool_input(item.arguments),
        }
    return {"type": "tool_use", "id": item.call_id, "name": _qualified(item), "input": {"input": item.input}}


def _message(
    snapshot: Snapshot,
    *,
    content: list[dict[str, Any]],
    stop: StopReason | None,
    usage: Usage | None,
    sequence: str | None = None,
) -> dict[str, Any]:
    return {
        "id": snapshot.response_id,
        "type": "message",
        "role": "assistant",
        "model": snapshot.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": sequence,
        "usage": messages_usage(usage),
    }


def message_body(snapshot: Snapshot, stops: tuple[str, ...] = ()) -> dict[str, Any]:
    """The non-streamed ``message`` body: the fold, rendered (a failed run is an error body instead).

    ``stops``: the request's ``stop_sequences``, reported when one ended the text.
    """
    content = [_block(item) for item in snapshot.output()]
    return _message(
        snapshot,
        content=content,
        stop=stop_reason(snapshot, stops),
        usage=snapshot.usage,
        sequence=matched_stop(snapshot, stops),
    )


def messages_failure(snapshot: Snapshot) -> tuple[int, dict[str, Any]]:
    """A run that failed before anything was sent: the HTTP status and Anthropic's error body.

    This is how an over-long prompt must reach Claude Code: a 400 whose message is
    :func:`prompt_too_long`, so the edge holds the response head until the engine's first
    event is known (as ``/v1/completions`` does).
    """
    error = snapshot.error or {"code": "cancelled", "message": "The response was cancelled."}
    code = str(error["code"])
    status = FAILURE_STATUS.get(code, 500)
    return status, error_body(failure_message(code, str(error["message"]), snapshot.usage), status=status)


def count_tokens_body(input_tokens: int) -> dict[str, Any]:
    """``POST /v1/messages/count_tokens``: the prompt's size as the engine counts it."""
    return {"input_tokens": input_tokens}


# --- framing ---------------------------------------------------------------------------------

_json = msgspec.json.Encoder()
_TAGS: dict[type[MessagesEvent], bytes] = {}


def messages_frame(event: MessagesEvent) -> bytes:
    """``event: <type>\\ndata: <json>\\n\\n``, as Anthropic frames every event."""
    kind = type(event)
    tag = _TAGS.get(kind)
    if tag is None:
        tag = _TAGS[kind] = str(kind.__struct_config__.tag).encode()
    return b"event: " + tag + b"\ndata: " + _json.encode(event) + b"\n\n"


PING_FRAME = messages_frame(Ping())
