"""The streaming engine for formats whose call arguments are JSON (SPEC P2-P4, P7, P8).

Hermes/Qwen, Llama 3, Mistral, DeepSeek V3/V3.1, Kimi-K2 and harmony all write a call as
*opener, header, JSON payload, closer*; they differ in the markers, in what the header may
hold (a name, an id, a channel line) and in how the payload names the tool. A
:class:`CallFormat` (``_callformat.py``) says that much; :class:`JsonCallParser` does the rest, identically for
every family.

Theory of operation
-------------------
The parser is in one mode at a time; each mode's state is its own small value
(``_jsonstate.py``), made fresh when the mode is entered.

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

A call that is all in the buffer at hand (whole text, a big chunk) is first tried in one
step from ``TEXT``: a blank header, the first closer within ``WHOLE_CALL_LIMIT`` characters,
and between them a payload the format accepts as it stands. Whatever that step does not accept
(a quoted closer, bad JSON, a partial call) goes through the modes, which decide the same for
an accepted call, so the step is a shortcut and never a second set of rules.

A call that completes is validated once, whole, by the format's ``calls``: strict JSON,
a declared name (``resolve_tool_name``), arguments that are an object. Then it is reported
as one :class:`ToolCall` with the arguments exactly as written. A call that fails (bad
header, invalid or unterminated JSON, undeclared name, something other than its closer after
the payload) has its opener released as text and everything after the opener is parsed
again as text: so a restarted opener is parsed from the restart and the abandoned prefix is
text, and an unterminated call at ``finish`` is text (SPEC P7). A call whose payload is
complete and valid but whose closer never came (output cut by the token budget) is still
reported at ``finish``.

Calls are never streamed (SPEC P4)
----------------------------------
Nothing of a call goes out before it has completed and validated: no argument deltas, no
opened item. Arguments can stop being JSON, or the output can stop inside them, at any
character before the closer, and a client acts on every call a completed response holds; a
call whose arguments were streamed could only be taken back by ending it ``incomplete``
inside a ``completed`` response. Holding the call until its closer costs the client the
arguments' progress and nothing else: the parser buffers the payload for validation in any
case, and the response's keepalives go on meanwhile. So a completed response holds only
completed calls with valid JSON arguments, an output cut inside a call is text in an
``incomplete`` response, and a failed call reads the same in every chunking as in the
whole text (SPEC P3).

Every decision depends only on the text, never on where a chunk ended, so streaming gives
the whole-text segments (SPEC P3). The parser walks each buffer by position and never
copies what is left of it: markers are found with one regex search from where the last one
ended (:class:`MarkerSet`), a call's chunks are collected in a list and joined once, and a
failed call that began in the same buffer is re-read by moving back to just after its opener.
The only text looked at twice is a failed call's body. A chunk that can only be part of a
marker (or of the closer after a payload), and a chunk inside a string argument, is taken in
without a scan.

Kimi's section markers (``<|tool_calls_section_begin|>``, ``…_end|>``) are special tokens and
are dropped wherever they stand. Other section markers (DeepSeek's ``<｜tool▁calls▁begin｜>``)
and Llama 3's ``;`` between calls are markup only when calls follow: a section opener is held
(with the whitespace after it) until the next call, which drops it, or until anything else,
which releases it as text. A section end is dropped after a call reported in that section and
is text otherwise. Whitespace around calls is ordinary text (the item tracker keeps
whitespace-only text out of the items).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from accord.pipeline.holdback import find_first, marker_set
from accord.pipeline.segments import Content, ParsedSegment, ToolCall, ToolSpec
from accord.pipeline.tools._callformat import HEAD_LEN, CallFormat
from accord.pipeline.tools._jsonscan import IN_STRING, INVALID, MORE, JsonScanner, decode_at
from accord.pipeline.tools._jsonstate import Call, Mode, Payload, Tail, TextOut, skip_ws
from accord.pipeline.tools.toolbox import ToolBox

_TEXT, _HEADER, _PAYLOAD, _TAIL = Mode.TEXT, Mode.HEADER, Mode.PAYLOAD, Mode.TAIL

#: How far a call read in one step (``_whole_call``) may reach; a longer one is scanned.
WHOLE_CALL_LIMIT = 8192
_NOT_WS = re.compile(r"[^ \t\r\n]")
_NOT_SEP = re.compile(r"[^ \t\r\n;]")
_FENCE = "```"


class JsonCallParser:
    """A ``ToolCallParser`` for one :class:`CallFormat` and the tools of one request."""

    def __init__(self, fmt: CallFormat, tools: Sequence[ToolSpec]) -> None:
        self._fmt = fmt
        self._tools = ToolBox(tools)
        self._openers = fmt.openers
        self._text_markers = (*fmt.openers, *fmt.section_begins, *fmt.section_ends)
        self._text_set = marker_set(self._text_markers)
        self._lead = re.compile("[" + re.escape(self._text_set.firsts) + "]")
        self._held_whole = self._text_set.held_whole()
        self._ends = (*fmt.closers, *fmt.soft_closers)
        self._end_max = max((len(m) for m in self._ends), default=1)
        self._hard = fmt.hard_closers
        # Part of a closer that ends no closer yet (nor starts a fence): what the tail holds.
        self._tail_whole = frozenset(
            m[:k]
            for m in self._ends
            for k in range(1, len(m))
            if not any(m[:k].startswith(c) for c in self._ends) and not (fmt.fence and m.startswith("`"))
        )
        self._closer_set = marker_set(fmt.closers)
        # A call that is all in one buffer may be read in one step (see ``_whole_call``).
        self._whole_ok = bool(fmt.closers) and not (
            fmt.hard_closers or fmt.fence or fmt.checks_payload_prefix
        )
        self._closer_memo: tuple[str | None, int, int, int, str] = (None, 0, 0, -1, "")
        self._checks_head = fmt.checks_payload_prefix
        self._tokens_only = fmt.section_markers_are_tokens
        self._mode = _TEXT
        # A suffix of the last chunk that may start a marker.
        self._held = ""
        self._text = TextOut()
        # The last call reported was in a section whose end may follow.
        self._section_ok = False
        self._bare = fmt.bare_calls
        self._after_call = False
        # The open call and its modes' state (fresh values while in TEXT).
        self._call = Call("", -1)
        self._pl = Payload(head_decided=True, fast=True)
        self._tl = Tail()
        self._scanner = JsonScanner()
        # A buffer to continue with instead of the current one (a failed call from an earlier
        # chunk, read again), with the position to start at.
        self._switch: tuple[str, int] | None = None
        self._out: list[ParsedSegment] = []

    # -- ToolCallParser ------------------------------------------------------------------

    def feed(self, text: str) -> list[ParsedSegment]:
        if not text:
            return []
        mode = self._mode
        if mode is _TEXT:
            held = self._held
            if not (held or self._text.pending or self._bare):
                lead = self._lead.search(text)
                if lead is None:
                    return [Content(text=text)]
                k = lead.start()
                if text[k:] in self._held_whole:
                    # A marker starting at the chunk's end: the text before it goes out, it is held.
                    self._held = text[k:]
                    return [Content(text=text[:k])] if k else []
            elif held and not (self._text.pending or self._bare) and held + text in self._held_whole:
                # A marker still arriving (the middle of ``<tool_call>``): held whole, as the scan
                # would hold it.
                self._held = held + text
                return []
        elif (
            mode is _PAYLOAD
            and self._pl.fast
            and not (self._hard and (self._pl.closer_held or self._closer_set.may_occur_in(text)))
        ):
            # Most chunks of a call land here: one scanner step, no copies -- or none at all, for
            # a chunk of a string argument with no quote or backslash in it.
            scanner = self._scanner
            if scanner.state == IN_STRING and '"' not in text and "\\" not in text:
                self._pl.chunks.append(text)
                return []
            e = scanner.feed(text)
            if e == MORE:
                self._pl.chunks.append(text)
                return []
            self._out = []
            self._call.opened_at = -1
            self._continue(text, self._scan_payload(text, 0, e))
            return self._flush()
        elif mode is _TAIL and self._tl.partial and self._tl.partial + text in self._tail_whole:
            # A closer still arriving after the payload: taken in as the tail scan would take it.
            self._tl.partial += text
            self._tl.chunks.append(text)
            return []
        self._out = []
        buf, self._held = self._held + text, ""
        self._run(buf, 0)
        return self._flush()

    def finish(self) -> list[ParsedSegment]:
        self._out = []
        while self._mode is not _TEXT:
            self._call.opened_at = -1
            self._finish_call()
            if self._switch is not None:
                buf, pos = self._switch
                self._switch = None
                self._run(buf, pos)
        held, self._held = self._held, ""
        self._text.emit(held)
        self._text.finish()
        return self._flush()

    # -- modes -----------------------------------------------------------------------------

    def _run(self, buf: str, pos: int) -> None:
        if self._mode is not _TEXT:
            self._call.opened_at = -1
        self._continue(buf, pos)

    def _continue(self, buf: str, pos: int) -> None:
        while True:
            n = len(buf)
            while pos < n:
                mode = self._mode
                if mode is _TEXT:
                    pos = self._scan_text(buf, pos)
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

    def _scan_text(self, buf: str, pos: int) -> int:
        if self._bare:
            m = (_NOT_SEP if self._after_call else _NOT_WS).search(buf, pos)
            if m is None:
                self._text.separator(buf[pos:], self._after_call)
                return len(buf)
            i = m.start()
            if buf[i] == "{":
                self._text.separator(buf[pos:i], self._after_call)
                self._open("", i)
                return i
            self._bare = False
        search = self._text_set.search
        while True:
            match = search(buf, pos)
            if match is None:
                n = len(buf)
                held = self._text_set.partial_len(buf, pos)
                self._text.emit(buf[pos : n - held])
                self._held = buf[n - held :] if held else ""
                return n
            at, marker = match.start(), match.group()
            if at > pos:
                self._text.emit(buf[pos:at])
            after = at + len(marker)
            if marker not in self._openers:
                break
            if self._whole_ok:
                # Whole text and big chunks: call after call read in place, text between.
                pos = self._whole_call(buf, marker, after)
                if pos >= 0:
                    if self._bare:
                        return pos
                    continue
            self._open(marker, after)
            return after
        if self._tokens_only:
            # A section marker that is a special token: structure, dropped. Whitespace after
            # a begin is held (an empty marker stands for the begin) and dropped with the end.
            if marker in self._fmt.section_begins:
                self._text.pending.append("")
                self._text.droppable = False
            else:
                self._text.pending.clear()
            self._section_ok = False
        elif marker in self._fmt.section_begins:
            self._text.pending.append(marker)
            self._text.droppable = False
            self._section_ok = False
        elif self._section_ok:
            # The end of a section that held calls: markup, dropped with the begin.
            self._text.pending.clear()
            self._section_ok = False
        else:
            self._text.release(marker)
        return after

    def _scan_header(self, buf: str, pos: int) -> int:
        fmt = self._fmt
        call = self._call
        prev = call.header
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
        if len(combined) - self._end_max >= fmt.header_cap or not fmt.header_prefix_ok(call.opener, combined):
            return self._fail(buf, pos)
        call.header = combined
        if j >= 0:
            self._mode = _PAYLOAD
        return stop

    def _scan_payload(self, buf: str, pos: int, e: int | None = None) -> int:
        pl = self._pl
        if e is None:
            if not pl.chunks:
                # A payload that is all here (whole text, big chunks) is decoded in one C call;
                # valid JSON ends where the scanner would have found its end.
                pl.decoded, e = decode_at(buf, pos)
            if e is None or e < 0:
                e = self._scanner.feed(buf, pos)
        if e == INVALID:
            return self._fail(buf, pos)
        end = len(buf) if e == MORE else e
        if not pl.head_decided:
            pl.head += buf[pos : min(end, pos + HEAD_LEN - len(pl.head))]
            verdict = self._fmt.payload_prefix_ok(pl.head)
            if verdict is False:
                return self._fail(buf, pos)
            if verdict or len(pl.head) >= HEAD_LEN:
                pl.head_decided = pl.fast = True
        if self._hard and (pl.closer_held or self._closer_set.may_occur_in(buf[pos:end])):
            window = pl.closer_held + buf[pos:end]
            if find_first(window, self._fmt.closers)[0] >= 0:
                return self._fail(buf, pos)
            held = self._closer_set.partial_len(window)
            pl.closer_held = window[len(window) - held :] if held else ""
        pl.chunks.append(buf[pos:end])
        if e == MORE:
            return end
        payload = "".join(pl.chunks)
        if not self._ends:
            return self._complete(payload, buf, e, e)
        self._tl = Tail(payload)
        self._mode = _TAIL
        return e

    def _scan_tail(self, buf: str, pos: int) -> int:
        fmt = self._fmt
        tl = self._tl
        n = len(buf)
        i = pos
        while True:
            if not tl.partial:
                i = skip_ws(buf, i)
                if i == n:
                    tl.chunks.append(buf[pos:])
                    return n
            held = tl.partial
            candidate = held + buf[i : i + self._end_max]
            if fmt.fence and not tl.fenced and candidate.startswith("`"):
                if candidate.startswith(_FENCE):
                    tl.fenced = True
                    tl.partial = ""
                    i += len(_FENCE) - len(held)
                    continue
                if _FENCE.startswith(candidate):
                    tl.partial = candidate
                    tl.chunks.append(buf[pos:])
                    return n
            for closer in fmt.closers:
                if candidate.startswith(closer):
                    return self._complete(tl.payload, buf, i + len(closer) - len(held), pos)
            for closer in fmt.soft_closers:
                if candidate.startswith(closer):
                    return self._complete(tl.payload, buf, i, pos, carry=held)
            if len(candidate) - len(held) == n - i and any(m.startswith(candidate) for m in self._ends):
                tl.partial = candidate
                tl.chunks.append(buf[pos:])
                return n
            return self._fail(buf, pos)

    # -- calls -----------------------------------------------------------------------------

    def _open(self, opener: str, at: int) -> None:
        self._mode = _HEADER
        self._call = Call(opener, at)
        checks = self._checks_head
        self._pl = Payload(head_decided=not checks, fast=not checks)
        self._tl = Tail()
        self._scanner.reset()

    def _whole_call(self, buf: str, opener: str, at: int) -> int:
        """Read the call at ``buf[at:]`` in one step if all of it is here and it is valid.

        The common case of whole text and of big chunks: a blank header, then a JSON object
        and blanks up to the first closer, within ``WHOLE_CALL_LIMIT`` characters. Returns
        where the text goes on, or -1 to leave the call to the modes, which decide the same
        for such a call and everything else (bad markup, a quoted closer, a partial call).
        """
        fmt = self._fmt
        j = skip_ws(buf, at)
        if buf[j : j + 1] != "{" or j - at + self._end_max >= fmt.header_cap:
            return -1
        k, closer = self._closer_from(buf, j)
        if k < 0:
            return -1
        header = buf[at:j]
        if not fmt.header_prefix_ok(opener, header):
            return -1
        calls = fmt.calls(opener, header, buf[j:k].rstrip(" \t\r\n"), self._tools)
        if not calls:
            return -1
        self._report(calls)
        return k + len(closer)

    def _closer_from(self, buf: str, j: int) -> tuple[int, str]:
        """The first closer in ``buf[j : j + WHOLE_CALL_LIMIT]``, or ``(-1, "")``.

        What was searched for the last call in this buffer is not searched again, so a run of
        openers that fail (hostile text) costs one pass, not one window each.
        """
        memo_buf, lo, hi, k, closer = self._closer_memo
        end = j + WHOLE_CALL_LIMIT
        start = j
        if memo_buf is buf and lo <= j:
            if k >= j:
                return k, closer  # the first closer after lo, so after j too, and before end
            if k < 0:
                start = max(j, hi - self._end_max + 1)  # none in [lo, hi) but one ending past hi
        k, closer = self._closer_set.find(buf, start, end)
        self._closer_memo = (buf, j, end, k, closer)
        return k, closer

    def _report(self, calls: list[ToolCall]) -> None:
        text = self._text
        text.pending.clear()
        text.flush(self._out)
        self._out.extend(calls)
        self._section_ok = True
        self._bare = self._after_call = self._fmt.bare_calls

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
        call = self._call
        if header is None:
            header = call.header
        calls = self._fmt.calls(call.opener, header, payload, self._tools, self._pl.decoded)
        if calls:
            self._report(calls)
        else:
            shown = self._fmt.shown_instead(call.opener, header, payload, self._tools)
            if shown is None:
                return self._fail(buf, taken)
            self._text.release("")
            self._flush()
            if shown.text:
                self._out.append(shown)
            self._bare = self._after_call = False
        self._mode = _TEXT
        if carry:
            self._switch = (carry + buf[rest:], 0)
            return len(buf)
        return rest

    def _fail(self, buf: str, taken: int) -> int:
        """Release the opener (and the markup held before it) as text and read on after it.

        ``taken``: how much of ``buf`` the call state holds already.
        """
        call = self._call
        self._mode = _TEXT
        self._text.release(call.opener)
        self._bare = self._after_call = False
        if call.opened_at >= 0:
            return call.opened_at
        body = call.header + "".join(self._pl.chunks) + "".join(self._tl.chunks) + buf[taken:]
        self._switch = (body, 0)
        return len(buf)

    def _finish_call(self) -> None:
        if self._mode is _TAIL:
            # Only whitespace or part of a closer came after a complete payload.
            self._complete(self._tl.payload, "", 0, 0)
        elif self._mode is _HEADER and self._fmt.opener_at_end_is_markup and not self._call.header.strip():
            # The output stopped right after the opener: a special token, not text to show.
            self._mode = _TEXT
            self._bare = self._after_call = False
            self._text.emit(self._call.header)
        else:
            self._fail("", 0)

    def _flush(self) -> list[ParsedSegment]:
        """The segments so far, with the text collected since the last call as one Content."""
        return self._text.flush(self._out)


__all__ = ["JsonCallParser"]
