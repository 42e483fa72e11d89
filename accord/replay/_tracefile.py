"""Reading a trace file back (the format is :mod:`accord.events.trace`)."""

from __future__ import annotations

from pathlib import Path

from accord.errors import TraceError
from accord.events.trace import Trace, decode_trace

__all__ = ["Trace", "TraceError", "load_trace"]


def load_trace(path: Path) -> Trace:
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror or exc}") from None
    return decode_trace(text, str(path))
