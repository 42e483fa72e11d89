"""The trace format (SPEC R1): one JSON-lines file per response.

Written by the server (:mod:`accord.adapters.traces`) and read by the replay tools
(:mod:`accord.replay`), so it lives below both. Pure: bytes in, bytes out.

A trace holds what is needed to run the response again and to judge the rerun: the
request (and the stored history and item references it was resolved against), the
options the chain was built with, every engine event with its time offset and token ids,
every wire event as sent, the final response and how the response ended. Line by line::

    {"kind": "trace", "version": 1, "response_id", "created_at", "stream", "redacted", "options",
     "request", "history", "references"}
    {"kind": "engine", "t": 0.012, "event": {"kind": "chunk", "text": "...", "token_ids": [...]}}
    {"kind": "wire", "t": 0.013, "event": {"type": "response.output_text.delta", ...}}
    {"kind": "final", "response": {...}}
    {"kind": "end", "cause": "completed" | "incomplete" | "failed:<code>" | "client_disconnected" | ...}

With redaction on, every prompt-text string of the request is replaced by a marker, and
the lifecycle events' echoed ``instructions`` too; the model's own output stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from accord.errors import TraceError
from accord.events.generation import GenerationOutput
from accord.events.wire import WireEvent

TRACE_VERSION = 1
REDACTED = "[redacted]"
#: Keys whose string values are prompt text; everything structural (types, roles, ids, names) stays.
_PROMPT_TEXT_KEYS = frozenset(
    {
        "text",
        "content",
        "output",
        "input",
        "instructions",
        "arguments",
        "refusal",
        "encrypted_content",
        "image_url",
        "file_data",
        "file_url",
        "summary",
    }
)

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


class TraceOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The server options a response was produced under; replay builds its chain from them."""

    reasoning_parser: str
    tool_parser: str
    profile: str | None = None
    model: str = ""
    keepalive_interval: float = 10.0
    web_search: str = "refuse"
    vision: bool = False
    #: Reasoning was sealed into ``encrypted_content`` (replay cannot reproduce the ciphertext).
    sealed: bool = False


class Trace(msgspec.Struct, kw_only=True):
    path: str
    header: dict[str, Any]
    engine: list[tuple[float, GenerationOutput]]
    wire: list[dict[str, Any]]
    final: dict[str, Any] | None = None
    cause: str | None = None

    @property
    def options(self) -> dict[str, Any]:
        options = self.header.get("options")
        return options if isinstance(options, dict) else {}


def redact(value: Any, *, under_text_key: bool = False) -> Any:
    """``value`` with every prompt-text string replaced by a marker (never by "", which some inputs refuse)."""
    if isinstance(value, str):
        return REDACTED if under_text_key and value else value
    if isinstance(value, list):
        return [redact(v, under_text_key=under_text_key) for v in value]
    if isinstance(value, dict):
        return {k: redact(v, under_text_key=k in _PROMPT_TEXT_KEYS) for k, v in value.items()}
    return value


def redact_request(request: dict[str, Any]) -> dict[str, Any]:
    out = dict(request)
    for key in ("input", "instructions"):
        if key in out:
            out[key] = redact(out[key], under_text_key=True)
    return out


def redact_lifecycle(event: dict[str, Any]) -> dict[str, Any]:
    """A wire event (or ``{"response": final}``) with the echoed instructions redacted."""
    response = event.get("response")
    if isinstance(response, dict) and response.get("instructions"):
        event = {
            **event,
            "response": {**response, "instructions": redact(response["instructions"], under_text_key=True)},
        }
    return event


def encode_trace(
    header: dict[str, Any],
    engine: Sequence[tuple[float, GenerationOutput]],
    wire: Sequence[tuple[float, WireEvent]],
    final: dict[str, Any],
    cause: str,
    *,
    redacted: bool,
) -> bytes:
    """The whole file, from what a run recorded."""
    lines = [_encode(header)]
    for t, engine_event in engine:
        lines.append(_encode({"kind": "engine", "t": round(t, 6), "event": engine_event}))
    for t, wire_event in wire:
        event = msgspec.to_builtins(wire_event)
        lines.append(
            _encode(
                {"kind": "wire", "t": round(t, 6), "event": redact_lifecycle(event) if redacted else event}
            )
        )
    if final:
        response = redact_lifecycle({"response": final})["response"] if redacted else final
        lines.append(_encode({"kind": "final", "response": response}))
    lines.append(_encode({"kind": "end", "cause": cause}))
    return b"\n".join(lines) + b"\n"


def decode_trace(text: bytes, path: str) -> Trace:
    """A trace read back; :class:`TraceError` says what is wrong with a file that is not one."""
    lines = [line for line in text.split(b"\n") if line.strip()]
    if not lines:
        raise TraceError("empty file")
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        try:
            record = _decode(line)
        except msgspec.DecodeError as exc:
            raise TraceError(f"line {number}: {exc}") from None
        if not isinstance(record, dict):
            raise TraceError(f"line {number}: not a JSON object")
        records.append(record)
    header = records[0]
    if header.get("kind") != "trace":
        raise TraceError("not an accord trace (no trace header)")
    if header.get("version") != TRACE_VERSION:
        raise TraceError(f"trace version {header.get('version')!r} is not supported")
    trace = Trace(path=path, header=header, engine=[], wire=[])
    for number, record in enumerate(records[1:], start=2):
        kind = record.get("kind")
        if kind == "engine":
            try:
                event = msgspec.convert(record.get("event"), GenerationOutput)
            except msgspec.ValidationError as exc:
                raise TraceError(f"line {number}: engine event: {exc}") from None
            trace.engine.append((float(record.get("t") or 0.0), event))
        elif kind == "wire":
            event_obj = record.get("event")
            if not isinstance(event_obj, dict):
                raise TraceError(f"line {number}: wire record without an event")
            trace.wire.append(event_obj)
        elif kind == "final":
            response = record.get("response")
            trace.final = response if isinstance(response, dict) else None
        elif kind == "end":
            cause = record.get("cause")
            trace.cause = cause if isinstance(cause, str) else None
    return trace
