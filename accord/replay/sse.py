"""Reading server-sent events as a client saved them (``curl -N``, ``curl -i -N``, a recording proxy).

Theory of operation: the text is cut into lines at ``\\r\\n``, ``\\r`` or ``\\n`` only (never at the other
characters ``str.splitlines`` honours, because model text inside a JSON string may carry a raw U+2028),
then fields are gathered per the WHATWG event-stream rules: ``:`` lines are comments, ``data`` lines of one
event are joined with ``\\n``, a blank line dispatches, ``id``/``retry`` and unknown fields are ignored.

Captures are rarely pristine, so the reader is tolerant and *reports* instead of refusing: an HTTP status
line and headers in front of the body (``curl -i``) are skipped and the status kept; a last frame that the
body ended inside of is still returned, flagged, because a client would never have seen it and the audit
has to say so (it is returned apart from the complete frames).
"""

from __future__ import annotations

import msgspec


class SseFrame(msgspec.Struct, frozen=True):
    """One dispatched event: its ``event:`` name (``None`` when absent) and its joined ``data``."""

    event: str | None
    data: str


class SseCapture(msgspec.Struct, kw_only=True):
    """Everything read from one saved body."""

    frames: list[SseFrame]
    #: HTTP status from a leading ``HTTP/1.1 200 OK`` block, when the capture has one.
    http_status: int | None = None
    #: Response headers from that block, lower-cased names.
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    #: The frame the body ended inside of (no blank line after it). Clients discard it, so it is kept
    #: apart from ``frames``; ``None`` when the body ended cleanly.
    partial: SseFrame | None = None
    #: Number of ``:`` comment lines (keepalive comments; they do not count as events).
    comments: int = 0


def _split_lines(text: str) -> list[str]:
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


def _strip_preamble(lines: list[str]) -> tuple[int, int | None, dict[str, str]]:
    """Skip ``HTTP/x status`` blocks (several when a ``100 Continue`` came first); return the body start."""
    start = 0
    status: int | None = None
    headers: dict[str, str] = {}
    while start < len(lines) and lines[start].startswith("HTTP/"):
        parts = lines[start].split(" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
        headers = {}
        start += 1
        while start < len(lines) and lines[start] != "":
            name, _, value = lines[start].partition(":")
            headers[name.strip().lower()] = value.strip()
            start += 1
        start += 1
    return start, status, headers


def parse_sse(text: str) -> SseCapture:
    """Parse one saved event-stream body; never raises on malformed input."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _split_lines(text)
    # A body ending in a newline leaves one empty string behind that is not a blank line.
    ended_with_newline = bool(lines) and lines[-1] == ""
    if ended_with_newline:
        lines.pop()
    start, status, headers = _strip_preamble(lines) if text.startswith("HTTP/") else (0, None, {})

    frames: list[SseFrame] = []
    comments = 0
    event: str | None = None
    data: list[str] = []
    pending = False
    for i in range(start, len(lines)):
        line = lines[i]
        if not line:
            if data:
                frames.append(SseFrame(event, "\n".join(data)))
            event, data, pending = None, [], False
            continue
        if line[0] == ":":
            comments += 1
            continue
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            data.append(value)
            pending = True
        elif name == "event":
            event = value
            pending = True
    # The body stopped inside a frame: a client never dispatches it, but the audit says what it held.
    partial = SseFrame(event, "\n".join(data)) if pending else None
    return SseCapture(frames=frames, http_status=status, headers=headers, partial=partial, comments=comments)
