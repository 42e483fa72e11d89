"""The state of :class:`~accord.pipeline.tools._jsoncalls.JsonCallParser`, one small value per mode.

The parser is in one :class:`Mode` at a time. The open call (``HEADER``, ``PAYLOAD``,
``TAIL``) is a :class:`Call`; the payload's scan is a :class:`Payload` and what follows it a
:class:`Tail`. Each is made fresh when its mode is entered, so no field outlives the call it
belongs to and there is nothing to reset by hand. The text side (``TEXT`` and the markup held
around calls) is a :class:`TextOut`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from accord.pipeline.segments import Content, ParsedSegment
from accord.pipeline.tools._jsonscan import UNDECODED


class Mode(enum.Enum):
    """Where the parser is in the text (see ``_jsoncalls``, "Theory of operation")."""

    TEXT = "text"
    HEADER = "header"
    PAYLOAD = "payload"
    TAIL = "tail"


@dataclass(slots=True)
class Call:
    """The open call: its opener, where its body starts in the current buffer (-1: in an
    earlier one), and its header as taken in so far."""

    opener: str
    opened_at: int
    header: str = ""


@dataclass(slots=True)
class Payload:
    """The payload being scanned: its chunks (joined once), its head while the format still
    checks it, the value when decoded in one step, and (hard closers) the end that could
    start a closer."""

    head_decided: bool
    #: Chunks need nothing but the scanner (no prefix check left).
    fast: bool
    chunks: list[str] = field(default_factory=list)
    head: str = ""
    decoded: Any = UNDECODED
    closer_held: str = ""


@dataclass(slots=True)
class Tail:
    """After a complete payload: its text, the tail taken in from earlier chunks, and the
    last non-whitespace run, which must still grow into a closer (or DeepSeek's fence)."""

    payload: str = ""
    chunks: list[str] = field(default_factory=list)
    partial: str = ""
    fenced: bool = False


@dataclass(slots=True)
class TextOut:
    """Text on its way out: markup held before a call (a section opener, separators), dropped
    when a call follows, and the text for the next :class:`Content`, joined once (a run of
    released markup is many pieces)."""

    pending: list[str] = field(default_factory=list)
    #: The pending markup is only separators after a call: dropped at the end.
    droppable: bool = False
    pieces: list[str] = field(default_factory=list)

    def separator(self, text: str, after_call: bool) -> None:
        """Whitespace (and ``;`` after a call) where a bare call may still follow."""
        if not text:
            return
        if after_call:
            if not self.pending:
                self.droppable = True
            self.pending.append(text)
        else:
            self.emit(text)

    def emit(self, text: str) -> None:
        if not text:
            return
        if self.pending:
            if text.isspace():
                self.pending.append(text)
                return
            self.release(text)
            return
        self.pieces.append(text)

    def release(self, text: str) -> None:
        """``text``, after the held markup, which is text after all."""
        if self.pending:
            text = "".join(self.pending) + text
            self.pending.clear()
        if text:
            self.pieces.append(text)

    def finish(self) -> None:
        if self.pending:
            if self.droppable:
                self.pending.clear()
            else:
                self.release("")

    def flush(self, out: list[ParsedSegment]) -> list[ParsedSegment]:
        """``out`` with the text collected since the last call appended as one Content."""
        if self.pieces:
            out.append(Content(text="".join(self.pieces)))
            self.pieces.clear()
        return out


def skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return i


__all__ = ["Call", "Mode", "Payload", "Tail", "TextOut", "skip_ws"]
