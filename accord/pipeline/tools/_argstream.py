"""The argument text of one streamed call on its way out (see ``_jsoncalls``, "Streamed calls").

Argument text goes out as it arrives, except for two things. A suffix that may be the start
of one of the format's markers is held back until the next text decides it (released into
the arguments when it turns out not to be one, or when the call is abandoned: it never
became a marker). And from a marker quoted inside the arguments on, nothing more goes out
until the call is decided: if the call completes, the rest goes out at once; if it is
abandoned, the parser reads on from that marker, so a call restarted inside another one is
parsed from its restart (SPEC P7). Each character is looked at a bounded number of times.
"""

from __future__ import annotations

import re

from accord.pipeline.holdback import MarkerSet, find_first
from accord.pipeline.segments import CallArguments, ParsedSegment


class ArgumentStream:
    """Sends a call's argument text as :class:`CallArguments`, holding back marker starts."""

    __slots__ = ("_blocked", "_held", "_lead", "_markers", "_set", "sent")

    def __init__(self, markers: tuple[str, ...]) -> None:
        self._markers = markers
        self._set = MarkerSet(markers)
        self._lead = re.compile("[" + re.escape(self._set.firsts) + "]")
        #: How many characters have gone out.
        self.sent = 0
        self._held = ""
        self._blocked = False

    def reset(self) -> None:
        self.sent = 0
        self._held = ""
        self._blocked = False

    def feed(self, text: str, out: list[ParsedSegment]) -> None:
        """More argument text: what may go out now is appended to ``out``."""
        if self._blocked or not text:
            return
        if not self._held and self._lead.search(text) is None:
            self._send(text, out)
            return
        window = self._held + text
        at = find_first(window, self._markers)[0]
        if at >= 0:
            self._blocked = True
            self._held = ""
            self._send(window[:at], out)
            return
        held = self._set.partial_len(window)
        self._held = window[len(window) - held :] if held else ""
        self._send(window[: len(window) - held] if held else window, out)

    def release(self, out: list[ParsedSegment]) -> None:
        """The call is abandoned: a held-back marker start never became a marker, so it goes out."""
        if self._held:
            self._send(self._held, out)
            self._held = ""

    def _send(self, text: str, out: list[ParsedSegment]) -> None:
        if text:
            out.append(CallArguments(delta=text))
            self.sent += len(text)


__all__ = ["ArgumentStream"]
