"""One scanner for every ``<think>``-style family, configured per name (SPEC P1, docs/model-formats.md B13).

Theory of operation
-------------------
The splitter is a small state machine over the text, fed in any chunks:

``LEAD``      the output starts outside reasoning, but a ``<think>`` at its very start
              (after whitespace) opens the block, as GLM-4.5 and Magistral write it.
``INSIDE``    reasoning. It ends at the first close tag, or at a tool-call opener written
              before it (GLM-5.x and Qwen3.5 call tools from inside an unclosed block): from
              that opener on the text is content, so the tool parser sees the call.
              A templated prompt may prefill the open tag; if the model writes it anyway
              at the start, that leading tag is dropped.
``OUTSIDE``   content. A later open tag is text. A close tag before any content closes a
              block the prompt already closed (thinking off) and is dropped.
``CLOSING``   a close tag after content, held with the whitespace after it: directly before
              the first tool-call opener it is dropped (the model closed the block late);
              before anything else it is text.
``VERBATIM``  from the first tool-call opener on, everything is content, unscanned, so tool
              arguments that quote the markup survive.
``HELD``      for a format with ``hold_openers`` (Magistral, Gemma 4), a tool-call opener
              inside reasoning is not yet a call: reasoning may mention its own markup. The
              text from it on is held until the close tag (then all of it was reasoning and
              the block ends there) or the end of the output (then it was a call written
              from inside the block, and it is content for the tool parser).

Whatever could still be the start of a marker is held back (``holdback.MarkerSet``) and
decided by the next chunk or released as text by ``finish``. Held text is bounded by the
longest marker (plus a capped whitespace run), and each character is examined a bounded
number of times, so streaming costs O(n) and gives the same segments as the whole text.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass

from accord.pipeline.holdback import marker_set
from accord.pipeline.reasoning._start import Start, start_after
from accord.pipeline.segments import Content, ParsedSegment, Reasoning

#: Leading whitespace longer than this is text, not layout before an open tag.
_MAX_LEAD = 64
#: Held pieces are joined in groups of this many.
_GROUP = 64


class _State(enum.Enum):
    LEAD = "lead"
    INSIDE = "inside"
    OUTSIDE = "outside"
    CLOSING = "closing"
    VERBATIM = "verbatim"
    HELD = "held"


@dataclass(frozen=True)
class ThinkFormat:
    """How one family marks reasoning and where its output starts for a thinking switch.

    ``tool_openers`` are read from the tool formats' vocabulary (``tools.markup``);
    ``start`` is the family's default, used only where no template was rendered.
    """

    open_tag: str
    close_tag: str
    tool_openers: tuple[str, ...]
    start: Callable[[bool | None], Start]
    #: A tool-call opener inside reasoning is held until the block closes or the output ends.
    hold_openers: bool = False

    def start_after(self, prompt: str) -> Start:
        return start_after(prompt, self.open_tag, self.close_tag)


_WS = re.compile(r"\s*")


class ThinkSplitter:
    """The reasoning splitter for one ``ThinkFormat`` and one request's thinking switch."""

    def __init__(self, fmt: ThinkFormat, thinking: bool | None, start: Start | None = None) -> None:
        self._open = fmt.open_tag
        self._close = fmt.close_tag
        self._openers = fmt.tool_openers
        self._markers = (*fmt.tool_openers, fmt.close_tag)
        self._held_markers = marker_set(self._markers)
        self._hold_openers = fmt.hold_openers
        self._close_only = marker_set((fmt.close_tag,))
        # HELD: the text from the opener on, joined in groups as it arrives (a long held
        # stretch is a few thousand strings, not one per 4-character chunk).
        self._pending: list[str] = []
        self._recent: list[str] = []
        firsts = marker_set((*self._markers, fmt.open_tag)).firsts
        # One first character (``<`` or ``[``) is one ``in`` test per chunk on the fast path.
        self._first = firsts if len(firsts) == 1 else ""
        self._firsts = firsts
        if start is None:
            start = fmt.start(thinking)
        self._state = _State.INSIDE if start is Start.INSIDE else _State.LEAD
        # At the start of a prefilled block, or of an output that may open one, a leading
        # open tag is still expected.
        self._leading = start is not Start.OUTSIDE
        if start is Start.OUTSIDE:
            self._state = _State.OUTSIDE
        self._content_started = False
        self._buf = ""
        self._ws = ""

    # -- public ---------------------------------------------------------------------------

    @property
    def verbatim(self) -> bool:
        """After the first tool-call opener outside reasoning: the rest is content, unread."""
        return self._state is _State.VERBATIM

    def feed(self, text: str) -> list[ParsedSegment]:
        if not text:
            return []
        state = self._state
        if state is _State.VERBATIM:
            return [Content(text=text)]
        # Fast path: nothing held and no character that could begin a marker.
        if (
            not self._buf
            and not self._leading
            and (self._first not in text if self._first else not any(c in text for c in self._firsts))
        ):
            if state is _State.INSIDE:
                return [Reasoning(text=text)]
            if state is _State.OUTSIDE:
                if not self._content_started and not text.isspace():
                    self._content_started = True
                return [Content(text=text)]
        out: list[ParsedSegment] = []
        self._buf += text
        self._run(out, final=False)
        return out

    def finish(self) -> list[ParsedSegment]:
        out: list[ParsedSegment] = []
        self._run(out, final=True)
        rest, self._buf = self._buf, ""
        if self._state is _State.HELD:
            # The block never closed: the opener began a call.
            _emit(out, Content, self._take_pending() + rest)
            self._state = _State.VERBATIM
        elif self._state is _State.CLOSING:
            _emit(out, Content, self._close + self._ws + rest)
            self._state = _State.OUTSIDE
        elif self._state is _State.INSIDE:
            _emit(out, Reasoning, rest)
        else:
            _emit(out, Content, rest)
        self._ws = ""
        return out

    # -- the machine ----------------------------------------------------------------------

    def _run(self, out: list[ParsedSegment], *, final: bool) -> None:
        """Consume ``self._buf`` as far as it can be decided; leave the undecided tail in it."""
        buf = self._buf
        end = len(buf)
        i = 0
        while i < end:
            if self._leading:
                i = self._lead(buf, i, final)
                if self._leading:
                    break
                continue
            state = self._state
            if state is _State.VERBATIM:
                out.append(Content(text=buf[i:]))
                i = end
                break
            if state is _State.CLOSING:
                j = self._closing(out, buf, i, final)
                if j < 0:
                    i = -j - 1
                    break
                i = j
                continue
            if state is _State.HELD:
                i = self._held(out, buf, i, final)
                if self._state is _State.HELD:
                    break
                continue
            pos, marker = self._held_markers.find(buf, i)
            kind = Reasoning if state is _State.INSIDE else Content
            if pos < 0:
                cut = end if final else end - self._held_markers.partial_len(buf, i)
                self._text(out, kind, buf[i:cut])
                i = cut
                break
            self._text(out, kind, buf[i:pos])
            if marker == self._close:
                i = pos + len(marker)
                if state is _State.INSIDE or not self._content_started:
                    # The end of the block, or a repeated close before any content: dropped.
                    self._state = _State.OUTSIDE
                else:
                    self._state = _State.CLOSING
                continue
            if state is _State.INSIDE and self._hold_openers:
                # Inside reasoning an opener may be a mention: decided by what closes first.
                self._state = _State.HELD
                i = pos
                continue
            # The first tool-call opener: the rest of the output is content, verbatim.
            self._state = _State.VERBATIM
            out.append(Content(text=buf[pos:]))
            i = end
        self._buf = buf[i:] if i else buf

    def _held(self, out: list[ParsedSegment], buf: str, i: int, final: bool) -> int:
        """Hold text from an opener inside reasoning until the close tag; the next position."""
        pos = buf.find(self._close, i)
        if pos < 0:
            cut = len(buf) if final else len(buf) - self._close_only.partial_len(buf, i)
            if cut > i:
                recent = self._recent
                recent.append(buf[i:cut])
                if len(recent) >= _GROUP:
                    self._pending.append("".join(recent))
                    recent.clear()
            return cut
        # The block closed after the opener: it was reasoning that mentions the markup.
        _emit(out, Reasoning, self._take_pending() + buf[i:pos])
        self._state = _State.OUTSIDE
        return pos + len(self._close)

    def _take_pending(self) -> str:
        held = "".join(self._pending) + "".join(self._recent)
        self._pending, self._recent = [], []
        return held

    def _lead(self, buf: str, i: int, final: bool) -> int:
        """Drop a leading open tag and the whitespace before it; ``_leading`` stays while undecided."""
        j = _skip_ws(buf, i)
        if j - i <= _MAX_LEAD:
            if buf.startswith(self._open, j):
                self._leading = False
                self._state = _State.INSIDE
                return j + len(self._open)
            if not final and self._open.startswith(buf[j : j + len(self._open)]):
                return i
        # No leading tag: prefilled reasoning carries on; an unopened output is content.
        self._leading = False
        if self._state is _State.LEAD:
            self._state = _State.OUTSIDE
        return i

    def _closing(self, out: list[ParsedSegment], buf: str, i: int, final: bool) -> int:
        """Decide a held close tag after content: next position, or ``-(pos + 1)`` while undecided."""
        j = _skip_ws(buf, i)
        self._ws += buf[i:j]
        if buf.startswith(self._openers, j):
            # Directly before the first tool call: the late close is dropped.
            _emit(out, Content, self._ws)
            self._ws = ""
            self._state = _State.VERBATIM
            return j
        head = buf[j : j + max(map(len, self._openers), default=0)]
        if j == len(buf) or (not final and any(o.startswith(head) for o in self._openers)):
            return -(j + 1)
        _emit(out, Content, self._close + self._ws)
        self._ws = ""
        self._state = _State.OUTSIDE
        return j

    def _text(self, out: list[ParsedSegment], kind: type[Reasoning] | type[Content], text: str) -> None:
        if not text:
            return
        if kind is Content and not self._content_started and not text.isspace():
            self._content_started = True
        out.append(kind(text=text))


def _skip_ws(text: str, i: int) -> int:
    match = _WS.match(text, i)
    return match.end() if match else i


def _emit(out: list[ParsedSegment], kind: type[Reasoning] | type[Content], text: str) -> None:
    if text:
        out.append(kind(text=text))


__all__ = ["ThinkFormat", "ThinkSplitter"]
