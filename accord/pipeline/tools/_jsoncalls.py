"""The streaming engine for formats whose call arguments are JSON (SPEC P2-P4, P7, P8).

Hermes/Qwen, Llama 3, Mistral, DeepSeek V3/V3.1, Kimi-K2 and harmony all write a call as
*opener, header, JSON payload, closer*; they differ in the markers, in what the header may
hold (a name, an id, a channel line) and in how the payload names the tool. A
:class:`CallFormat` (``_callformat.py``) says that much; :class:`JsonCallParser` does the rest, identically for
every family.

Theory of operation
-------------------
``TEXT``     content. Text before an opener is emitted; a suffix that could start an opener
             (or a section marker) is held back until the next chunk decides it.
``HEADER``   after an opener, up to the payload's first bracket. Bounded (``header_cap``),
             checked by the format as it grows, so prose after a stray opener is released
             quickly.
``PAYLOAD``  the JSON, followed by :class:`JsonScanner` (depth/string state only), so a
             closer quoted inside a string argument does not end the call. A character that
             cannot stand outside a JSON string (the ``<`` of a restarted opener) fails the
             call at once.
``TAIL``     after the payload: whitespace (and DeepSeek's closing fence) up to the closer.
             Formats without a closer (Llama 3, Mistral) end the call with the payload.

A call that completes is validated once, whole, by the format's ``calls``: strict JSON,
a declared name (``resolve_tool_name``), arguments that are an object. Then it is reported
as one :class:`ToolCall` with the arguments exactly as written. A call that fails before it
streams (bad header, invalid or unterminated JSON, undeclared name) has its opener released
as text and everything after the opener is parsed again as text: so a restarted opener is
parsed from the restart and the abandoned prefix is text, and an unterminated call at
``finish`` is text (SPEC P7). A call whose payload is complete and valid but whose closer
never came (output cut by the token budget) is still reported at ``finish``.

Streamed calls
--------------
Where the format can tell, from the header and the payload's head, that the call names a
declared tool and where its arguments object begins (``CallFormat.stream_start``), the call
opens as soon as that ``{`` has arrived: :class:`CallOpened`, then :class:`CallArguments` with
the argument text as the scanner accepts it, and :class:`CallClosed` once the call completes
and validates exactly as above, with the deltas joining into its arguments. Only a suffix
that may be the start of a marker is held back; from a marker quoted inside the arguments on,
nothing more is sent until the call is decided. A call that fails after it opened cannot take
back what it sent: it ends with :class:`CallAbandoned`, keeping its markup and the argument
text it sent, and the parser reads on as text right after that text (from the quoted marker,
if any, so a restart is still parsed from the restart). A payload decoded whole in one step
streams only if its call fails; when it completes it is reported as one :class:`ToolCall`,
which ``merge_segments`` makes of a streamed call too.

Every decision depends only on the text, never on where a chunk ended, so streaming gives
the whole-text segments (SPEC P3): whether a call streams depends only on its header and the
first ``STREAM_HEAD_LEN`` characters of its payload, and what an abandoned call keeps is its
argument text up to the earliest of the failure, the arguments' end and a quoted marker. The parser walks each buffer by position and never copies
what is left of it: markers are found with a :class:`MarkerFinder`, a call's chunks are
collected in a list and joined once, and a failed call that began in the same buffer is
re-read by moving back to just after its opener. The only text looked at twice is a failed
call's body.

Section markers (Kimi's ``<|tool_calls_section_begin|>``, DeepSeek's ``<｜tool▁calls▁begin｜>``)
and Llama 3's ``;`` between calls are markup only when calls follow: a section opener is held
(with the whitespace after it) until the next call, which drops it, or until anything else,
which releases it as text. A section end is dropped after a call reported in that section and
is text otherwise. Whitespace around calls is ordinary text (the item tracker keeps
whitespace-only text out of the items).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import Any

from accord.pipeline._finder import MarkerFinder
from accord.pipeline.holdback import MarkerSet, find_first
from accord.pipeline.segments import (
    CallAbandoned,
    CallArguments,
    CallClosed,
    CallOpened,
    Content,
    ParsedSegment,
    ToolSpec,
)
from accord.pipeline.tools._argstream import ArgumentStream
from accord.pipeline.tools._callformat import HEAD_LEN, STREAM_HEAD_LEN, UNDECIDED, CallFormat, Opening
from accord.pipeline.tools._jsonscan import INVALID, MORE, UNDECODED, JsonScanner, decode_at


class _Mode(enum.Enum):
    """Where the parser is in the text (see "Theory of operation")."""

    TEXT = "text"
    HEADER = "header"
    PAYLOAD = "payload"
    TAIL = "tail"


_TEXT, _HEADER, _PAYLOAD, _TAIL = _Mode.TEXT, _Mode.HEADER, _Mode.PAYLOAD, _Mode.TAIL

_NOT_WS = re.compile(r"[^ \t\r\n]")
_NOT_SEP = re.compile(r"[^ \t\r\n;]")
_FENCE = "```"


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return i


class JsonCallParser:
    """A ``ToolCallParser`` for one :class:`CallFormat` and the tools of one request."""

    def __init__(self, fmt: CallFormat, tools: Sequence[ToolSpec]) -> None:
        self._fmt = fmt
        self._tools = tuple(tools)
        self._openers = fmt.openers
        self._text_markers = (*fmt.openers, *fmt.section_begins, *fmt.section_ends)
        self._text_set = MarkerSet(self._text_markers)
        self._lead = re.compile("[" + re.escape(self._text_set.firsts) + "]")
        self._ends = (*fmt.closers, *fmt.soft_closers)
        self._end_max = max((len(m) for m in self._ends), default=1)
        self._mode = _TEXT
        self._held = ""
        # Markup before a call (section opener, separators), dropped when a call follows.
        self._pending: list[str] = []
        self._pending_droppable = False
        self._section_ok = False
        self._bare = fmt.bare_calls
        self._after_call = False
        # The open call: its opener, where its body starts in the current buffer (-1: in an
        # earlier one), and what of it has been taken in so far.
        self._opener = ""
        self._opened_at = -1
        self._header = ""
        self._payload: list[str] = []
        self._payload_text = ""
        self._head = ""
        self._head_decided = False
        self._decoded: Any = UNDECODED
        # Payload chunks need nothing but the scanner (no prefix check, no hard closers).
        self._payload_fast = False
        # Hard closers: the end of the payload so far that could start one.
        self._hard = fmt.hard_closers
        self._closer_set = MarkerSet(fmt.closers)
        self._closer_held = ""
        self._scanner = JsonScanner()
        # After the payload: the tail text taken in from earlier chunks, and its last
        # non-whitespace run, which must still grow into a closer (or DeepSeek's fence).
        self._tail: list[str] = []
        self._partial = ""
        self._fenced = False
        # Streaming the arguments (see "Streamed calls"): the payload's head while the
        # format cannot yet tell, the call once it streams (``_streaming``: opened; ``_args_open``:
        # its arguments still arriving), and its argument text on the way out.
        self._payload_len = 0
        self._stream_decided = True
        self._stream_head = ""
        self._opening: Opening | None = None
        self._streaming = False
        self._args_open = False
        self._args = ArgumentStream(self._text_markers)
        # A buffer to continue with instead of the current one (a failed call from an earlier
        # chunk, read again), with the position to start at.
        self._switch: tuple[str, int] | None = None
        self._out: list[ParsedSegment] = []
        # Text for the next Content segment, joined once (a run of released markup is many pieces).
        self._text: list[str] = []

    # -- ToolCallParser ------------------------------------------------------------------

    def feed(self, text: str) -> list[ParsedSegment]:
        if not text:
            return []
        mode = self._mode
        if mode is _TEXT:
            if not (self._held or self._pending or self._bare) and self._lead.search(text) is None:
                return [Content(text=text)]
        elif (
            mode is _PAYLOAD
            and self._payload_fast
            and not (self._hard and (self._closer_held or self._closer_set.may_occur_in(text)))
        ):
            # Most chunks of a call land here: one scanner step, no copies.
            e = self._scanner.feed(text)
            if e == MORE:
                self._payload.append(text)
                self._payload_len += len(text)
                if self._args_open:
                    self._out = []
                    self._args.feed(text, self._out)
                    return self._out
                return []
            self._out = []
            self._opened_at = -1
            self._continue(text, self._scan_payload(text, 0, e))
            return self._flush()
        self._out = []
        buf, self._held = self._held + text, ""
        self._run(buf, 0)
        return self._flush()

    def finish(self) -> list[ParsedSegment]:
        self._out = []
        while self._mode is not _TEXT:
            self._opened_at = -1
            self._finish_call()
            if self._switch is not None:
                buf, pos = self._switch
                self._switch = None
                self._run(buf, pos)
        held, self._held = self._held, ""
        self._emit(held)
        if self._pending:
            if self._pending_droppable:
                self._pending.clear()
            else:
                self._release("")
        return self._flush()

    # -- modes -----------------------------------------------------------------------------

    def _run(self, buf: str, pos: int) -> None:
        if self._mode is not _TEXT:
            self._opened_at = -1
        self._continue(buf, pos)

    def _continue(self, buf: str, pos: int) -> None:
        finder: MarkerFinder | None = None
        while True:
            n = len(buf)
            while pos < n:
                mode = self._mode
                if mode is _TEXT:
                    if finder is None:
                        finder = MarkerFinder(buf, self._text_markers)
                    pos = self._scan_text(buf, pos, finder)
                elif mode is _HEADER:
                    pos = self._scan_header(buf, pos)
                elif mode is _PAYLOAD:
                    pos = self._scan_payload(buf, pos)
                else:
                    pos = self._scan_tail(buf, pos)
                if self._switch is not None:
                    break
            if self._switch is None:
                return
            buf, pos = self._switch
            self._switch = None
            finder = None

    def _scan_text(self, buf: str, pos: int, finder: MarkerFinder) -> int:
        if self._bare:
            m = (_NOT_SEP if self._after_call else _NOT_WS).search(buf, pos)
            if m is None:
                self._separator(buf[pos:])
                return len(buf)
            i = m.start()
            if buf[i] == "{":
                self._separator(buf[pos:i])
                self._open("", i)
                return i
            self._bare = False
        at, marker = finder.find(pos)
        if at < 0:
            n = len(buf)
            held = self._text_set.partial_len(buf, pos)
            self._emit(buf[pos : n - held])
            self._held = buf[n - held :] if held else ""
            return n
        self._emit(buf[pos:at])
        after = at + len(marker)
        if marker in self._openers:
            self._open(marker, after)
        elif marker in self._fmt.section_begins:
            self._pending.append(marker)
            self._pending_droppable = False
            self._section_ok = False
        elif self._section_ok or (
            self._fmt.empty_section_is_markup and any(p in self._fmt.section_begins for p in self._pending)
        ):
            # The end of a section that held calls, or of an empty one (only whitespace
            # since its begin): markup, dropped with the begin.
            self._pending.clear()
            self._section_ok = False
        else:
            self._release(marker)
        return after

    def _scan_header(self, buf: str, pos: int) -> int:
        fmt = self._fmt
        prev = self._header
        # A header longer than the cap fails, so no more than that is ever looked at.
        end = min(len(buf), pos + fmt.header_cap - len(prev) + self._end_max + 1)
        j = buf.find("{", pos, end)
        if fmt.array_payload:
            b = buf.find("[", pos, end if j < 0 else j)
            if b >= 0 and not (prev + buf[pos:b]).strip():
                j = b
        stop = end if j < 0 else j
        # The header so far; a closer in it cannot reach past the payload's bracket.
        combined = prev + buf[pos:stop]
        k, closer = -1, ""
        if self._ends:
            k, closer = find_first(combined, self._ends, max(0, len(prev) - self._end_max + 1))
        if k >= 0:
            header = combined[:k]
            if not fmt.header_only or len(header) > fmt.header_cap:
                return self._fail(buf, pos)
            after = k + len(closer) if closer in fmt.closers else k
            if after >= len(prev):
                return self._complete(None, buf, pos + after - len(prev), pos, header=header)
            return self._complete(None, buf, stop, pos, carry=combined[after:], header=header)
        if len(combined) - self._end_max >= fmt.header_cap or not fmt.header_prefix_ok(
            self._opener, combined
        ):
            return self._fail(buf, pos)
        self._header = combined
        if j >= 0:
            self._mode = _PAYLOAD
        return stop

    def _scan_payload(self, buf: str, pos: int, e: int | None = None) -> int:
        if e is None:
            if not self._payload:
                # A payload that is all here (whole text, big chunks) is decoded in one C call;
                # valid JSON ends where the scanner would have found its end. Whether it streams
                # is then asked only if the call fails (it completes in this very step).
                self._decoded, e = decode_at(buf, pos)
            if e is None or e < 0:
                if not self._stream_decided:
                    self._decide_stream(buf, pos)
                if self._opening is not None and not self._streaming:
                    self._open_streaming()
                e = self._scanner.feed(buf, pos)
        if e == INVALID:
            if self._streaming:
                j = self._scanner.invalid_at
                self._take(buf[pos:j])
                return self._fail(buf, j)
            return self._fail(buf, pos)
        end = len(buf) if e == MORE else e
        if not self._head_decided:
            self._head += buf[pos : min(end, pos + HEAD_LEN - len(self._head))]
            verdict = self._fmt.payload_prefix_ok(self._head)
            if verdict is False:
                return self._fail(buf, pos)
            if verdict or len(self._head) >= HEAD_LEN:
                self._head_decided = True
                self._payload_fast = self._stream_decided
        if self._fmt.hard_closers and (self._closer_held or self._closer_set.may_occur_in(buf[pos:end])):
            window = self._closer_held + buf[pos:end]
            if find_first(window, self._fmt.closers)[0] >= 0:
                return self._fail(buf, pos)
            held = self._closer_set.partial_len(window)
            self._closer_held = window[len(window) - held :] if held else ""
        self._take(buf[pos:end])
        if e == MORE:
            return end
        if self._scanner.target:
            # The arguments inside the wrapper ended; the wrapper goes on.
            self._scanner.target = 0
            self._args_open = False
            return e
        self._args_open = False
        payload = "".join(self._payload)
        if not self._ends:
            return self._complete(payload, buf, e, e)
        self._payload_text = payload
        self._mode = _TAIL
        return e

    def _scan_tail(self, buf: str, pos: int) -> int:
        fmt = self._fmt
        n = len(buf)
        i = pos
        while True:
            if not self._partial:
                i = _skip_ws(buf, i)
                if i == n:
                    self._tail.append(buf[pos:])
                    return n
            held = self._partial
            candidate = held + buf[i : i + self._end_max]
            if fmt.fence and not self._fenced and candidate.startswith("`"):
                if candidate.startswith(_FENCE):
                    self._fenced = True
                    self._partial = ""
                    i += len(_FENCE) - len(held)
                    continue
                if _FENCE.startswith(candidate):
                    self._partial = candidate
                    self._tail.append(buf[pos:])
                    return n
            for closer in fmt.closers:
                if candidate.startswith(closer):
                    return self._complete(self._payload_text, buf, i + len(closer) - len(held), pos)
            for closer in fmt.soft_closers:
                if candidate.startswith(closer):
                    return self._complete(self._payload_text, buf, i, pos, carry=held)
            if len(candidate) - len(held) == n - i and any(m.startswith(candidate) for m in self._ends):
                self._partial = candidate
                self._tail.append(buf[pos:])
                return n
            return self._fail(buf, pos)

    # -- calls -----------------------------------------------------------------------------

    def _open(self, opener: str, at: int) -> None:
        self._mode = _HEADER
        self._opener = opener
        self._opened_at = at
        self._reset_call()

    def _reset_call(self) -> None:
        self._header = ""
        self._payload = []
        self._payload_text = ""
        self._head = ""
        self._head_decided = not self._fmt.checks_payload_prefix
        self._decoded = UNDECODED
        self._payload_fast = not self._fmt.checks_payload_prefix
        self._closer_held = ""
        self._scanner.reset()
        self._tail = []
        self._partial = ""
        self._fenced = False
        self._payload_len = 0
        self._stream_decided = not self._fmt.streams
        self._stream_head = ""
        self._payload_fast = self._payload_fast and self._stream_decided
        self._end_call()
        self._args.reset()

    def _end_call(self) -> None:
        self._opening = None
        self._streaming = False
        self._args_open = False

    def _complete(
        self,
        payload: str | None,
        buf: str,
        rest: int,
        taken: int,
        carry: str = "",
        header: str | None = None,
    ) -> int:
        """Report the block's calls and go on at ``buf[rest:]`` (after ``carry``), or fail it.

        ``taken``: how much of ``buf`` the call state holds already (for a failure's re-read).
        ``header``: the header, when the state does not hold it (a call without payload).
        """
        if header is None:
            header = self._header
        calls = self._fmt.calls(self._opener, header, payload, self._tools, self._decoded)
        if not calls:
            return self._fail(buf, taken)
        self._pending.clear()
        if self._streaming:
            unsent = calls[0].arguments[self._args.sent :]
            if unsent:
                self._out.append(CallArguments(delta=unsent))
            self._out.append(CallClosed())
        else:
            self._flush()
            self._out.extend(calls)
        self._end_call()
        self._section_ok = True
        self._mode = _TEXT
        self._bare = self._after_call = self._fmt.bare_calls
        if carry:
            self._switch = (carry + buf[rest:], 0)
            return len(buf)
        return rest

    def _fail(self, buf: str, taken: int) -> int:
        """Release the opener (and the markup held before it) as text and read on after it.

        ``taken``: how much of ``buf`` the call state holds already. A call that streams is
        abandoned instead.
        """
        if not self._stream_decided and self._decoded is not UNDECODED:
            self._decide_stream("".join(self._payload), 0)
        if self._opening is not None:
            return self._abandon(buf, taken)
        self._mode = _TEXT
        self._release(self._opener)
        self._bare = self._after_call = False
        if self._opened_at >= 0:
            return self._opened_at
        body = self._header + "".join(self._payload) + "".join(self._tail) + buf[taken:]
        self._switch = (body, 0)
        return len(buf)

    # -- streamed calls --------------------------------------------------------------------

    def _decide_stream(self, buf: str, pos: int) -> None:
        prev = self._stream_head
        piece = buf[pos : pos + STREAM_HEAD_LEN - len(prev)]
        head = prev + piece
        if prev and "{" not in piece and len(head) < STREAM_HEAD_LEN:
            # Asked before and undecided: only the arguments' "{" can make the answer yes.
            self._stream_head = head
            return
        verdict = self._fmt.stream_start(self._opener, self._header, head, self._tools)
        if verdict == UNDECIDED and len(head) < STREAM_HEAD_LEN:
            self._stream_head = head
            return
        self._stream_decided = True
        self._stream_head = ""
        self._payload_fast = self._head_decided
        if isinstance(verdict, Opening):
            self._opening = verdict

    def _open_call(self) -> None:
        assert self._opening is not None
        self._pending.clear()
        self._flush()
        self._out.append(CallOpened(name=self._opening.name, call_id=self._opening.call_id))
        self._streaming = True

    def _open_streaming(self) -> None:
        """Open the call and stream its arguments as the scanner takes them in."""
        assert self._opening is not None
        self._open_call()
        self._args_open = True
        if self._opening.at:
            # The arguments are a member of a wrapper: the scan stops where they end.
            self._scanner.target = 1

    def _take(self, piece: str) -> None:
        """Payload text the scanner accepted; the part that is arguments streams."""
        before = self._payload_len
        self._payload.append(piece)
        self._payload_len = before + len(piece)
        if self._args_open:
            assert self._opening is not None
            skip = self._opening.at - before
            self._args.feed(piece[skip:] if skip > 0 else piece, self._out)

    def _abandon(self, buf: str, taken: int) -> int:
        """End the streamed call unfinished and read on as text right after what it sent."""
        opening = self._opening
        assert opening is not None
        payload: str | None = None
        if not self._streaming:
            # The payload arrived whole and valid (decoded in one call), but what follows it
            # is not the call's end: the call streams now, all at once, and is abandoned.
            payload = "".join(self._payload)
            self._open_call()
            self._args.feed(payload[opening.at : self._args_end(payload, opening.at)], self._out)
        self._args.release(self._out)
        self._out.append(CallAbandoned())
        resume = opening.at + self._args.sent
        self._end_call()
        self._mode = _TEXT
        self._section_ok = True
        self._bare = self._after_call = False
        if self._opened_at >= 0:
            return self._opened_at + len(self._header) + resume
        if payload is None:
            payload = "".join(self._payload)
        self._switch = (payload[resume:] + "".join(self._tail) + buf[taken:], 0)
        return len(buf)

    @staticmethod
    def _args_end(payload: str, at: int) -> int:
        """Where arguments starting at ``at`` of a valid payload end."""
        if not at:
            return len(payload)
        end = decode_at(payload, at, len(payload))[1]
        return end if end >= 0 else len(payload)

    def _finish_call(self) -> None:
        if self._mode is _TAIL:
            # Only whitespace or part of a closer came after a complete payload.
            self._complete(self._payload_text, "", 0, 0)
        elif self._mode is _HEADER and self._fmt.opener_at_end_is_markup and not self._header.strip():
            # The output stopped right after the opener: a special token, not text to show.
            self._mode = _TEXT
            self._bare = self._after_call = False
            self._emit(self._header)
        else:
            self._fail("", 0)

    # -- text ------------------------------------------------------------------------------

    def _separator(self, text: str) -> None:
        """Whitespace (and ``;`` after a call) where a bare call may still follow."""
        if not text:
            return
        if self._after_call:
            if not self._pending:
                self._pending_droppable = True
            self._pending.append(text)
        else:
            self._emit(text)

    def _emit(self, text: str) -> None:
        if not text:
            return
        if self._pending:
            if text.isspace():
                self._pending.append(text)
                return
            self._release(text)
            return
        self._content(text)

    def _release(self, text: str) -> None:
        if self._pending:
            text = "".join(self._pending) + text
            self._pending.clear()
        self._content(text)

    def _content(self, text: str) -> None:
        if text:
            self._text.append(text)

    def _flush(self) -> list[ParsedSegment]:
        """The segments so far, with the text collected since the last call as one Content."""
        if self._text:
            self._out.append(Content(text="".join(self._text)))
            self._text.clear()
        return self._out


__all__ = ["JsonCallParser"]
