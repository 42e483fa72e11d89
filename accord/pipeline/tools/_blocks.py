"""The streaming engine for formats whose calls are reported whole (SPEC P4, P7).

GLM, Qwen3-Coder and DSML write a call (or a section of calls) between an opener and a
closer, with arguments that only the schema can type. Such a call cannot be streamed as it
grows, so the engine only finds the blocks; a format's ``parse`` turns one complete block
into segments. Because streaming and whole-text parsing hand ``parse`` the very same block
text, they cannot disagree (the seed's lesson: one function for both paths).

Theory of operation
-------------------
``TEXT``   content. Text before an opener is emitted; a suffix that could be the start of an
           opener is held back until the next chunk decides it. A stray closer is text.
``BLOCK``  inside a block: chunks are collected (a list, never re-joined per chunk) until the
           first closer. An opener seen before that closer restarts the block there: the
           abandoned prefix is released as text (SPEC P7). On the closer the whole block goes
           to ``parse``; ``None`` means "not a call" and the raw markup is released as text.
At ``finish`` a held partial marker is text, and an unterminated block is offered to
``parse`` with ``closer=None`` (DSML keeps the complete calls of a cut-off section); by
default its markup is released as text.

Markers are found with one regex search for all of them (an alternation, longest first) that
starts where the last marker ended, so a whole 1 MB output with thousands of calls is scanned in
O(n); a chunk that can only be the start of a marker is held without a search at all.
"""

from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Sequence
from typing import Protocol

from accord.pipeline.holdback import marker_set
from accord.pipeline.segments import Content, ParsedSegment, ToolSpec
from accord.pipeline.tools.toolbox import ToolBox

_GROUP = 64


class Reopen(enum.Enum):
    """What an opener found inside an open block is."""

    #: The block was abandoned: its prefix is text, a block starts again here.
    RESTART = "restart"
    #: Quoted inside a value: the block's data.
    DATA = "data"
    #: The block already ended at its last closer (a value's own closing tag was missing):
    #: it closes there, what follows that closer is text, and a block starts here.
    SPLIT = "split"


class BlockFormat(Protocol):
    """What the engine needs to know about one family's markup."""

    openers: tuple[str, ...]
    closers: tuple[str, ...]
    #: Markers inside a block that show it has structure (a parameter began): from one on,
    #: an opener inside the block is quoted data, not a restart.
    inner: tuple[str, ...]
    #: Inner markers that both open and close a quoted span (Gemma 4's ``<|"|>``): a second
    #: one in a row ends the span, so ``last_inner`` is ``None`` again after it.
    toggles: frozenset[str]
    #: Dropped when it follows (whitespace aside) a block that one of ``bare_openers`` opened:
    #: the closer of a wrapper whose opener the model left out.
    trailer: str | None
    bare_openers: frozenset[str]

    def closers_for(self, opener: str) -> frozenset[str]:
        """The closers that can end a block opened by ``opener``; other closers are its data."""
        ...

    def ends_block(self, opener: str, tail: str, whole: bool, last_inner: str | None) -> bool:
        """Whether a closer after a body ending in ``tail`` ends the block.

        ``whole``: ``tail`` is all of the body; ``last_inner``: the last inner marker in it.
        """
        ...

    def reopens(self, opener: str, marker: str, tail: str, last_inner: str | None) -> Reopen:
        """What ``marker`` (an opener) inside an open block means."""
        ...

    def parse(self, opener: str, body: str, closer: str | None, tools: ToolBox) -> list[ParsedSegment] | None:
        """Segments for one block (``closer`` is ``None`` when cut off); ``None``: release as text."""
        ...


class BlockMarkup:
    """Defaults for a :class:`BlockFormat`: the first closer ends a block, any opener restarts it."""

    openers: tuple[str, ...] = ()
    closers: tuple[str, ...] = ()
    inner: tuple[str, ...] = ()
    toggles: frozenset[str] = frozenset()
    trailer: str | None = None
    bare_openers: frozenset[str] = frozenset()

    def closers_for(self, opener: str) -> frozenset[str]:
        del opener
        return frozenset(self.closers)

    def ends_block(self, opener: str, tail: str, whole: bool, last_inner: str | None) -> bool:
        del opener, tail, whole, last_inner
        return True

    def reopens(self, opener: str, marker: str, tail: str, last_inner: str | None) -> Reopen:
        del opener, marker, tail, last_inner
        return Reopen.RESTART


#: How much of a block body's end ``BlockFormat.ends_block`` sees.
TAIL = 64

_SPACE = re.compile(r"\s*")


def skip_space(text: str, i: int) -> int:
    """The first position at or after ``i`` that is not whitespace (the layout between markers)."""
    match = _SPACE.match(text, i)
    return match.end() if match else i


class _Body:
    """A block body collected from many small chunks.

    Chunks are joined in groups as they arrive, so a 1 MB body is a few thousand strings,
    not a quarter of a million 4-character ones; each character is copied at most twice.
    """

    __slots__ = ("_pieces", "_recent")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._recent: list[str] = []

    def add(self, text: str) -> None:
        recent = self._recent
        recent.append(text)
        if len(recent) >= _GROUP:
            self._pieces.append("".join(recent))
            recent.clear()

    def tail(self, last: str, size: int) -> tuple[str, bool]:
        """The body's last ``size`` characters (with ``last`` appended) and whether that is all of it."""
        if len(last) >= size:
            return last[-size:], False
        parts = [last]
        have = len(last)
        # Lazily, newest first: only the last few pieces are ever looked at.
        for piece in itertools.chain(reversed(self._recent), reversed(self._pieces)):
            parts.append(piece)
            have += len(piece)
            if have >= size:
                return "".join(reversed(parts))[-size:], False
        return "".join(reversed(parts)), True

    def take(self, last: str) -> str:
        """The whole body with ``last`` appended; the collector is empty afterwards."""
        if not self._pieces and not self._recent:
            return last
        body = "".join(self._pieces) + "".join(self._recent) + last
        self._pieces, self._recent = [], []
        return body


class BlockToolParser:
    """A ``ToolCallParser`` for one ``BlockFormat`` and the tools of one request."""

    def __init__(self, fmt: BlockFormat, tools: Sequence[ToolSpec]) -> None:
        self._fmt = fmt
        self._box = ToolBox(tools)
        self._openers = fmt.openers
        self._closers = frozenset(fmt.closers)
        self._closers_for = {o: fmt.closers_for(o) for o in fmt.openers}
        self._opener_set = frozenset(fmt.openers)
        self._inner = frozenset(fmt.inner)
        self._toggles = fmt.toggles
        self._all = (*fmt.openers, *fmt.closers, *fmt.inner)
        self._in_text = marker_set(fmt.openers if fmt.trailer is None else (*fmt.openers, fmt.trailer))
        self._in_block = marker_set(self._all)
        self._first = self._in_block.firsts if len(self._in_block.firsts) == 1 else ""
        # What a scan (which searches every marker) would hold back whole, outside a block and in one.
        self._hold_text = self._in_text.held_whole(self._all)
        self._hold_block = self._in_block.held_whole()
        self._search = self._in_block.search
        self._opener: str | None = None  # the open block's opener; None in TEXT
        self._parts = _Body()  # the open block's body so far
        self._last_inner: str | None = None  # the last inner marker seen in the open block
        # A bare block just closed and nothing but whitespace followed: its trailer is dropped.
        self._after_bare = False
        self._held = ""

    def feed(self, text: str) -> list[ParsedSegment]:
        if not text:
            return []
        held = self._held
        if not held and (self._first not in text if self._first else not self._in_block.may_occur_in(text)):
            # No marker can start here: text passes, a block body grows.
            if self._opener is None:
                if self._after_bare and not text.isspace():
                    self._after_bare = False
                return [Content(text=text)]
            self._parts.add(text)
            return []
        if held:
            buf = held + text
            if buf in (self._hold_text if self._opener is None else self._hold_block):
                self._held = buf  # a marker still arriving
                return []
        else:
            buf = text
            k = text.find(self._first) if self._first else -1
            if k >= 0 and text[k:] in (self._hold_text if self._opener is None else self._hold_block):
                # A marker starting at the chunk's end: what comes before it goes on, it is held.
                self._held = text[k:]
                if k == 0:
                    return []
                if self._opener is not None:
                    self._parts.add(text[:k])
                    return []
                if self._after_bare and not text[:k].isspace():
                    self._after_bare = False
                return [Content(text=text[:k])]
        out: list[ParsedSegment] = []
        self._held = ""
        self._scan(buf, out)
        return out

    def finish(self) -> list[ParsedSegment]:
        out: list[ParsedSegment] = []
        held, self._held = self._held, ""
        if self._opener is None:
            if held:
                out.append(Content(text=held))
            return out
        body = self._parts.take(held)
        opener, self._opener = self._opener, None
        self._close(out, opener, body, None)
        return out

    def _scan(self, buf: str, out: list[ParsedSegment]) -> None:
        # Each search starts where the last marker ended: no stretch is searched twice.
        search = self._search
        start = 0  # where the text not yet emitted or collected begins
        i = 0
        while True:
            m = search(buf, i)
            if m is None:
                break
            pos, marker = m.start(), m.group()
            i = pos + len(marker)
            opener = self._opener
            if opener is None:
                if marker in self._closers:
                    if (
                        marker == self._fmt.trailer
                        and self._after_bare
                        and (pos == start or buf[start:pos].isspace())
                    ):
                        # The wrapper's closer after a bare block: markup, dropped.
                        if pos > start:
                            out.append(Content(text=buf[start:pos]))
                        start = i
                    self._after_bare = False
                    continue  # otherwise a stray closer is text
                if marker not in self._opener_set:
                    continue  # an inner marker outside a block is text
                if pos > start:
                    out.append(Content(text=buf[start:pos]))
                self._opener, start = marker, i
                self._last_inner = None
                self._after_bare = False
                continue
            if marker in self._closers_for[opener]:
                if pos - start >= TAIL:
                    tail, whole = buf[pos - TAIL : pos], False
                else:
                    tail, whole = self._parts.tail(buf[start:pos], TAIL)
                if not self._fmt.ends_block(opener, tail, whole, self._last_inner):
                    continue  # quoted inside a value: data
                body = self._parts.take(buf[start:pos])
                self._opener = None
                self._close(out, opener, body, marker)
                self._after_bare = opener in self._fmt.bare_openers
            elif marker in self._opener_set:
                tail = (
                    buf[max(start, pos - TAIL) : pos]
                    if pos - start >= TAIL
                    else self._parts.tail(buf[start:pos], TAIL)[0]
                )
                reopen = self._fmt.reopens(opener, marker, tail, self._last_inner)
                if reopen is Reopen.DATA:
                    continue  # quoted inside a value
                body = self._parts.take(buf[start:pos])
                if reopen is Reopen.SPLIT:
                    self._split(out, opener, body)
                else:
                    # Restarted opener: the abandoned prefix is text, the block starts again here.
                    out.append(Content(text=opener + body))
                self._opener = marker
                self._last_inner = None
            else:
                if marker in self._inner:
                    if marker in self._toggles and self._last_inner == marker:
                        self._last_inner = None  # the quoted span it opened is closed
                    else:
                        self._last_inner = marker
                continue  # another opener's closer, or an inner marker: the block's data
            start = i
        markers = self._in_text if self._opener is None else self._in_block
        cut = len(buf) - markers.partial_len(buf, start)
        if cut > start:
            if self._opener is None:
                if self._after_bare and not buf[start:cut].isspace():
                    self._after_bare = False
                out.append(Content(text=buf[start:cut]))
            else:
                self._parts.add(buf[start:cut])
        self._held = buf[cut:]

    def _split(self, out: list[ParsedSegment], opener: str, body: str) -> None:
        """Close the block at the last of its closers in ``body``; the rest is text."""
        best, closer = -1, ""
        for candidate in self._closers_for[opener]:
            at = body.rfind(candidate)
            if at > best:
                best, closer = at, candidate
        if best < 0:
            out.append(Content(text=opener + body))
            return
        self._close(out, opener, body[:best], closer)
        rest = body[best + len(closer) :]
        if rest:
            out.append(Content(text=rest))

    def _close(self, out: list[ParsedSegment], opener: str, body: str, closer: str | None) -> None:
        segments = self._fmt.parse(opener, body, closer, self._box)
        if segments is None:
            out.append(Content(text=opener + body + (closer or "")))
        else:
            out.extend(segments)


__all__ = ["TAIL", "BlockFormat", "BlockMarkup", "BlockToolParser", "Reopen", "ToolBox", "skip_space"]
