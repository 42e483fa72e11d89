"""The streaming engine for formats whose call arguments are JSON (SPEC P2-P4, P7, P8).

Hermes/Qwen, Llama 3, Mistral, DeepSeek V3/V3.1, Kimi-K2 and harmony all write a call as
*opener, header, JSON payload, closer*; they differ in the markers, in what the header may
hold (a name, an id, a channel line) and in how the payload names the tool. A
:class:`CallFormat` says that much; :class:`JsonCallParser` does the rest, identically for
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
as one :class:`ToolCall` with the arguments exactly as written. A call that fails anywhere
(bad header, invalid or unterminated JSON, undeclared name) has its opener released as text
and everything after the opener is parsed again as text: so a restarted opener is parsed from
the restart and the abandoned prefix is text, and an unterminated call at ``finish`` is text
(SPEC P7). A call whose payload is complete and valid but whose closer never came (output cut
by the token budget) is still reported at ``finish``.

Every decision depends only on the text, never on where a chunk ended, so streaming gives
the whole-text segments (SPEC P3). The parser walks each buffer by position and never copies
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

import re
from collections.abc import Sequence

from accord.pipeline._finder import MarkerFinder
from accord.pipeline.holdback import find_first, split_safe
from accord.pipeline.segments import Content, ParsedSegment, ToolCall, ToolSpec
from accord.pipeline.tools._jsonscan import INVALID, MORE, JsonScanner
from accord.pipeline.tools.names import resolve_tool_name

_TEXT, _HEADER, _PAYLOAD, _TAIL = range(4)

#: How much of a payload's start ``CallFormat.payload_prefix_ok`` sees.
HEAD_LEN = 64

_NOT_WS = re.compile(r"[^ \t\r\n]")
_NOT_SEP = re.compile(r"[^ \t\r\n;]")
_FENCE = "```"
#: Tail text examined per step (whitespace runs longer than this take several steps).
_TAIL_STEP = 256


def _skip_ws(text: str, i: int) -> int:
    m = _NOT_WS.search(text, i)
    return len(text) if m is None else m.start()


class CallFormat:
    """One family's markup; subclasses set the markers and implement :meth:`calls`."""

    #: Markers that open a call.
    openers: tuple[str, ...] = ()
    #: Markers that end a call and belong to it; none: the call ends with its payload.
    closers: tuple[str, ...] = ()
    #: Markers that end a call without belonging to it (the end of its section).
    soft_closers: tuple[str, ...] = ()
    section_begins: tuple[str, ...] = ()
    section_ends: tuple[str, ...] = ()
    #: A closer ends the payload even inside a JSON string (harmony: closers are tokens the
    #: reasoning splitter has already acted on).
    hard_closers = False
    #: A markdown fence may close the payload before the closer (DeepSeek V3).
    fence = False
    #: A payload may start with ``[`` when the header is blank (Mistral's pre-v11 list).
    array_payload = False
    #: A closer right after the header is a call without arguments.
    header_only = False
    #: A ``{`` at the start of the output (or after a call and ``;``) opens a call (Llama 3).
    bare_calls = False
    header_cap = 256

    def header_prefix_ok(self, opener: str, header: str) -> bool:
        """Whether ``header`` can still grow into a valid header; ``False`` fails the call."""
        del opener, header
        return True

    def payload_prefix_ok(self, head: str) -> bool:
        """Whether a payload starting with ``head`` (up to ``HEAD_LEN`` chars) may be a call."""
        del head
        return True

    def calls(
        self, opener: str, header: str, payload: str | None, tools: Sequence[ToolSpec]
    ) -> list[ToolCall] | None:
        """The calls one complete block stands for; ``None`` (or none) releases it as text."""
        raise NotImplementedError


def resolve(raw_name: str, tools: Sequence[ToolSpec]) -> str | None:
    """The declared name (as offered) ``raw_name`` stands for, or ``None`` (SPEC P6)."""
    spec = resolve_tool_name(raw_name.strip(), tools)
    return None if spec is None else spec.name


class JsonCallParser:
    """A ``ToolCallParser`` for one :class:`CallFormat` and the tools of one request."""

    def __init__(self, fmt: CallFormat, tools: Sequence[ToolSpec]) -> None:
        self._fmt = fmt
        self._tools = tuple(tools)
        self._openers = fmt.openers
        self._text_markers = (*fmt.openers, *fmt.section_begins, *fmt.section_ends)
        self._leads = frozenset(m[0] for m in self._text_markers)
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
        self._closer_window = ""
        self._scanner = JsonScanner()
        self._tail = ""
        self._tail_pos = 0
        self._fenced = False
        # A buffer to continue with instead of the current one (a failed call from an earlier
        # chunk, read again), with the position to start at.
        self._switch: tuple[str, int] | None = None
        self._out: list[ParsedSegment] = []

    # -- ToolCallParser ------------------------------------------------------------------

    def feed(self, text: str) -> list[ParsedSegment]:
        if not text:
            return []
        if (
            self._mode == _TEXT
            and not (self._held or self._pending or self._bare)
            and not any(c in text for c in self._leads)
        ):
            return [Content(text=text)]
        self._out = []
        buf, self._held = self._held + text, ""
        self._run(buf, 0)
        return self._out

    def finish(self) -> list[ParsedSegment]:
        self._out = []
        while self._mode != _TEXT:
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
        return self._out

    # -- modes -----------------------------------------------------------------------------

    def _run(self, buf: str, pos: int) -> None:
        if self._mode != _TEXT:
            self._opened_at = -1
        finder = MarkerFinder(buf, self._text_markers)
        while True:
            n = len(buf)
            while pos < n:
                mode = self._mode
                if mode == _TEXT:
                    pos = self._scan_text(buf, pos, finder)
                elif mode == _HEADER:
                    pos = self._scan_header(buf, pos)
                elif mode == _PAYLOAD:
                    pos = self._scan_payload(buf, pos)
                else:
                    pos = self._scan_tail(buf, pos)
                if self._switch is not None:
                    break
            if self._switch is None:
                return
            buf, pos = self._switch
            self._switch = None
            finder = MarkerFinder(buf, self._text_markers)

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
            safe, self._held = split_safe(buf[pos:], self._text_markers)
            self._emit(safe)
            return len(buf)
        self._emit(buf[pos:at])
        after = at + len(marker)
        if marker in self._openers:
            self._open(marker, after)
        elif marker in self._fmt.section_begins:
            self._pending.append(marker)
            self._pending_droppable = False
            self._section_ok = False
        elif self._section_ok:
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
        combined = prev + buf[pos:end]
        j = self._payload_start(combined, len(prev))
        k, closer = -1, ""
        if self._ends:
            k, closer = find_first(combined, self._ends, max(0, len(prev) - self._end_max + 1))
        if k >= 0 and (j < 0 or k < j):
            header = combined[:k]
            if not fmt.header_only or len(header) > fmt.header_cap:
                return self._fail(buf, pos)
            self._header = header
            stop = k + len(closer) if closer in fmt.closers else k
            if stop >= len(prev):
                return self._complete(None, buf, pos + stop - len(prev), pos)
            return self._complete(None, buf, end, pos, carry=combined[stop:])
        if j >= 0:
            header = combined[:j]
            if len(header) > fmt.header_cap or not fmt.header_prefix_ok(self._opener, header):
                return self._fail(buf, pos)
            self._header = header
            self._mode = _PAYLOAD
            return pos + j - len(prev)
        if len(combined) - self._end_max >= fmt.header_cap or not fmt.header_prefix_ok(
            self._opener, combined
        ):
            return self._fail(buf, pos)
        self._header = combined
        return end

    def _scan_payload(self, buf: str, pos: int) -> int:
        e = self._scanner.feed(buf, pos)
        if e == INVALID:
            return self._fail(buf, pos)
        end = len(buf) if e == MORE else e
        if len(self._head) < HEAD_LEN:
            self._head += buf[pos : min(end, pos + HEAD_LEN - len(self._head))]
            if not self._fmt.payload_prefix_ok(self._head):
                return self._fail(buf, pos)
        if self._fmt.hard_closers:
            window = self._closer_window + buf[pos:end]
            if find_first(window, self._fmt.closers)[0] >= 0:
                return self._fail(buf, pos)
            self._closer_window = window[-(self._end_max - 1) :]
        self._payload.append(buf[pos:end])
        if e == MORE:
            return end
        payload = "".join(self._payload)
        if not self._ends:
            return self._complete(payload, buf, e, e)
        self._payload_text = payload
        self._mode = _TAIL
        return e

    def _scan_tail(self, buf: str, pos: int) -> int:
        fmt = self._fmt
        old = self._tail
        end = min(len(buf), pos + _TAIL_STEP)
        tail = old + buf[pos:end]
        i = _skip_ws(tail, self._tail_pos)
        if fmt.fence and not self._fenced and tail.startswith("`", i):
            if tail.startswith(_FENCE, i):
                self._fenced = True
                i = _skip_ws(tail, i + len(_FENCE))
            elif _FENCE.startswith(tail[i:]):
                self._tail, self._tail_pos = tail, i
                return end
        self._tail_pos = i
        stop = -1
        for closer in fmt.closers:
            if tail.startswith(closer, i):
                stop = i + len(closer)
                break
        else:
            for closer in fmt.soft_closers:
                if tail.startswith(closer, i):
                    stop = i
                    break
        if stop >= 0:
            if stop >= len(old):
                return self._complete(self._payload_text, buf, pos + stop - len(old), pos)
            return self._complete(self._payload_text, buf, end, pos, carry=tail[stop:])
        rest = tail[i:]
        if any(m.startswith(rest) for m in self._ends):
            self._tail = tail
            return end
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
        self._closer_window = ""
        self._scanner = JsonScanner()
        self._tail = ""
        self._tail_pos = 0
        self._fenced = False

    def _payload_start(self, s: str, start: int) -> int:
        j = s.find("{", start)
        if self._fmt.array_payload:
            b = s.find("[", start)
            if b >= 0 and (j < 0 or b < j) and not s[:b].strip():
                return b
        return j

    def _complete(self, payload: str | None, buf: str, rest: int, taken: int, carry: str = "") -> int:
        """Report the block's calls and go on at ``buf[rest:]`` (after ``carry``), or fail it.

        ``taken``: how much of ``buf`` the call state holds already (for a failure's re-read).
        """
        calls = self._fmt.calls(self._opener, self._header, payload, self._tools)
        if not calls:
            return self._fail(buf, taken)
        self._pending.clear()
        self._out.extend(calls)
        self._section_ok = True
        self._mode = _TEXT
        self._bare = self._after_call = self._fmt.bare_calls
        self._reset_call()
        if carry:
            self._switch = (carry + buf[rest:], 0)
            return len(buf)
        return rest

    def _fail(self, buf: str, taken: int) -> int:
        """Release the opener (and the markup held before it) as text and read on after it.

        ``taken``: how much of ``buf`` the call state holds already.
        """
        self._mode = _TEXT
        self._release(self._opener)
        self._bare = self._after_call = False
        if self._opened_at >= 0:
            self._reset_call()
            return self._opened_at
        body = self._header + "".join(self._payload) + self._tail + buf[taken:]
        self._reset_call()
        self._switch = (body, 0)
        return len(buf)

    def _finish_call(self) -> None:
        if self._mode == _TAIL:
            # Only whitespace or part of a closer came after a complete payload.
            self._complete(self._payload_text, "", 0, 0)
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
        if not text:
            return
        out = self._out
        if out and isinstance(out[-1], Content):
            out[-1] = Content(text=out[-1].text + text)
        else:
            out.append(Content(text=text))


__all__ = ["HEAD_LEN", "CallFormat", "JsonCallParser", "resolve"]
