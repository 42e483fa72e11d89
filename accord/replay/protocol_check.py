"""Checking captured Chat Completions and Anthropic Messages streams (``accord audit``).

Sans-IO, like the Responses checker (``_check.py``): ``feed(data)`` per SSE frame's data,
then ``finish()`` for the defects. Each protocol has its own grammar, so each has its own
defect classes (``defects.py``):

* Messages: ``message_start`` first, then per block ``content_block_start`` at the next
  index, deltas of the block's own kind while it is open, ``content_block_stop``; then
  ``message_delta`` and ``message_stop``, or one ``error`` event; ``ping`` anywhere. The
  anthropic SDK's accumulator indexes blocks by position, so a skipped or repeated index
  breaks it, and it parses each ``input_json_delta`` run as JSON at the block's end.
* Chat Completions: one id throughout; ``role`` once, in the first chunk; each tool call
  opened at the next ``index`` (a new index that skips one breaks openai's accumulator),
  its ``id`` and ``name`` only in the chunk that opens it; one ``finish_reason``; ``[DONE]``
  last, or an error chunk before it.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from accord.replay.verdict import Defect

_decode = msgspec.json.Decoder().decode

#: The Messages stream event types, by which a capture is recognised as one.
MESSAGES_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    }
)
_DELTA_OF_BLOCK = {
    "text": {"text_delta"},
    "thinking": {"thinking_delta", "signature_delta"},
    "redacted_thinking": set(),
    "tool_use": {"input_json_delta"},
}


class MessagesChecker:
    def __init__(self) -> None:
        self.defects: list[Defect] = []
        self.events = 0
        self.response_id: str | None = None
        self.terminal: str | None = None
        self.blocks = 0
        self._open: dict[int, str] = {}
        self._json: dict[int, list[str]] = {}
        self._started = False
        self._ended = False

    def _defect(self, code: str, detail: str, *, breaks: bool = True, index: int | None = None) -> None:
        self.defects.append(Defect(code=code, detail=detail, breaks_sdk=breaks, output_index=index))

    def feed(self, data: str) -> None:
        try:
            event = _decode(data)
        except msgspec.DecodeError:
            self._defect("bad_event", f"not JSON: {data[:80]!r}")
            return
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            self._defect("bad_event", "a data payload without a string type")
            return
        self.events += 1
        kind = event["type"]
        if kind == "ping":
            return
        if self._ended:
            self._defect("messages_after_end", f"{kind} after the stream's end")
            return
        if kind == "message_start":
            if self._started:
                self._defect("messages_grammar", "a second message_start")
            self._started = True
            message = event.get("message")
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                self.response_id = message["id"]
            return
        if not self._started and kind != "error":
            self._defect("messages_grammar", f"{kind} before message_start")
        if kind == "error":
            self._end(kind)
            return
        index = event.get("index")
        if kind == "content_block_start":
            self._start(event, index)
        elif kind == "content_block_delta":
            self._delta(event, index)
        elif kind == "content_block_stop":
            self._stop(index)
        elif kind == "message_delta":
            if self._open:
                self._defect("messages_grammar", f"message_delta with blocks {sorted(self._open)} still open")
        elif kind == "message_stop":
            self._end(kind)
        else:
            self._defect("bad_event", f"unknown Messages event type {kind!r}", breaks=False)

    def _start(self, event: dict[str, Any], index: object) -> None:
        block = event.get("content_block")
        kind = block.get("type") if isinstance(block, dict) else None
        if index != self.blocks:
            self._defect(
                "block_index_gap",
                f"content_block_start at index {index!r}; the next block is {self.blocks}",
                index=index if isinstance(index, int) else None,
            )
        if isinstance(index, int):
            self._open[index] = str(kind)
            self._json[index] = []
            self.blocks = max(self.blocks, index + 1)

    def _delta(self, event: dict[str, Any], index: object) -> None:
        if not isinstance(index, int) or index not in self._open:
            self._defect("messages_grammar", f"a delta for block {index!r}, which is not open")
            return
        delta = event.get("delta")
        kind = delta.get("type") if isinstance(delta, dict) else None
        allowed = _DELTA_OF_BLOCK.get(self._open[index])
        if allowed is not None and kind not in allowed:
            self._defect("delta_kind_mismatch", f"{kind!r} in a {self._open[index]} block", index=index)
        if kind == "input_json_delta" and isinstance(delta, dict):
            self._json[index].append(str(delta.get("partial_json", "")))

    def _stop(self, index: object) -> None:
        if not isinstance(index, int) or index not in self._open:
            self._defect("messages_grammar", f"content_block_stop for block {index!r}, which is not open")
            return
        kind = self._open.pop(index)
        text = "".join(self._json.pop(index, []))
        if kind == "tool_use" and text:
            try:
                json.loads(text)
            except ValueError:
                self._defect(
                    "tool_input_not_json", "the block's input_json_delta text is not JSON", index=index
                )

    def _end(self, kind: str) -> None:
        self._ended = True
        self.terminal = kind
        if kind == "message_stop" and self._open:
            self._defect("messages_grammar", f"message_stop with blocks {sorted(self._open)} still open")

    def finish(self) -> list[Defect]:
        if not self._ended:
            self._defect("missing_terminal", "the stream ended without message_stop or an error event")
        return self.defects


class ChatChecker:
    def __init__(self) -> None:
        self.defects: list[Defect] = []
        self.events = 0
        self.response_id: str | None = None
        self.terminal: str | None = None
        self.calls = 0
        self._ids: set[str] = set()
        self._role_seen = False
        self._finished = False
        self._done = False
        self._errored = False

    def _defect(self, code: str, detail: str, *, breaks: bool = True, index: int | None = None) -> None:
        self.defects.append(Defect(code=code, detail=detail, breaks_sdk=breaks, output_index=index))

    def feed(self, data: str) -> None:
        if data.strip() == "[DONE]":
            if self._done:
                self._defect("chat_after_done", "a second [DONE]")
            self._done = True
            self.terminal = self.terminal or "[DONE]"
            return
        if self._done:
            self._defect("chat_after_done", "a chunk after [DONE]")
        try:
            chunk = _decode(data)
        except msgspec.DecodeError:
            self._defect("bad_event", f"not JSON: {data[:80]!r}")
            return
        if not isinstance(chunk, dict):
            self._defect("bad_event", "a data payload that is not an object")
            return
        self.events += 1
        if "error" in chunk and "choices" not in chunk:
            self._errored = True
            self.terminal = "error"
            return
        if self._errored:
            self._defect("chat_after_done", "a chunk after the error chunk")
        if isinstance(chunk.get("id"), str):
            self._ids.add(chunk["id"])
            self.response_id = self.response_id or chunk["id"]
            if len(self._ids) == 2:
                self._defect(
                    "conflicting_identities", "chunks of one stream carry different ids", breaks=False
                )
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict):
                self._choice(choice)

    def _choice(self, choice: dict[str, Any]) -> None:
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
        assert isinstance(delta, dict)
        if delta.get("role") is not None:
            if self._role_seen:
                self._defect("chat_role_repeated", "role sent again after the first chunk", breaks=False)
            self._role_seen = True
        for call in delta.get("tool_calls") or ():
            if isinstance(call, dict):
                self._call(call)
        if choice.get("finish_reason") is not None:
            if self._finished:
                self._defect("chat_grammar", "a second finish_reason")
            self._finished = True
            self.terminal = str(choice["finish_reason"])

    def _call(self, call: dict[str, Any]) -> None:
        index = call.get("index")
        if not isinstance(index, int):
            self._defect("tool_call_index_gap", "a tool-call delta without an integer index")
            return
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        assert isinstance(function, dict)
        if index == self.calls:
            self.calls += 1
            if not call.get("id") or not function.get("name"):
                self._defect("chat_grammar", f"call {index} opens without its id and name", index=index)
        elif index > self.calls:
            self._defect(
                "tool_call_index_gap",
                f"a call opens at index {index}; the next call is {self.calls}",
                index=index,
            )
            self.calls = index + 1
        elif call.get("id") or function.get("name"):
            # openai's accumulator concatenates every string: a repeated name doubles it.
            self._defect("chat_call_reopened", f"call {index}'s id or name sent again", index=index)

    def finish(self) -> list[Defect]:
        if not self._done:
            self._defect("missing_terminal", "the stream ended without data: [DONE]")
        if not self._finished and not self._errored:
            self._defect("chat_grammar", "no chunk carried a finish_reason")
        return self.defects


def protocol_of(event: str | None, data: str) -> str:
    """``messages``, ``chat`` or ``responses``: which protocol a capture's first frame speaks."""
    if event in MESSAGES_EVENTS:
        return "messages"
    if data.strip() == "[DONE]":
        return "chat"
    try:
        head = _decode(data)
    except msgspec.DecodeError:
        return "responses"
    if isinstance(head, dict):
        if head.get("object") == "chat.completion.chunk":
            return "chat"
        if head.get("type") in MESSAGES_EVENTS:
            return "messages"
    return "responses"
