"""Reading a trace file back (the format is described in :mod:`accord.replay.trace`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from accord.events.generation import GenerationOutput

_decode = msgspec.json.Decoder().decode


class TraceError(Exception):
    """The file is not a readable trace."""


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


def load_trace(path: Path) -> Trace:
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror or exc}") from None
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
    if header.get("version") != 1:
        raise TraceError(f"trace version {header.get('version')!r} is not supported")
    trace = Trace(path=str(path), header=header, engine=[], wire=[])
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
