"""Kimi K3's channels (``kimi_k3``, docs/model-formats.md B16).

A K3 assistant message is a sequence of channels framed by special tokens::

    <|open|>think<|sep|>…<|close|>think<|sep|><|open|>response<|sep|>…<|close|>response<|sep|>
    <|open|>tools<|sep|>…<|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>

The generation prompt ends with the opener of the first channel: ``<|open|>think<|sep|>`` with
thinking on, ``<|open|>response<|sep|>`` with it off (llama.cpp's ``kimi-k3-text`` chat parser,
pwilkin/llama.cpp#20, quotes the template). So the output starts inside reasoning, or inside
the response, and the prompt's tail says which (:meth:`KimiK3Factory.start_after`).

The think channel is split off by the shared ``<think>``-style machine
(:class:`ThinkSplitter`). On the content side, the response channel's frame and the message's
end are markup and are dropped, until the ``tools`` channel opens: from there the content goes
to the tool parser as it comes (its values may quote any of these markers, and it drops the
message end after the section itself).
"""

from __future__ import annotations

from accord.pipeline.holdback import marker_set
from accord.pipeline.reasoning import register
from accord.pipeline.reasoning._start import Start
from accord.pipeline.reasoning._think import ThinkFormat, ThinkSplitter
from accord.pipeline.segments import Content, ParsedSegment
from accord.pipeline.tools.markup import (
    K3_END_OF_MESSAGE,
    K3_MESSAGE_CLOSE,
    K3_REASONING_EXITS,
    K3_TOOLS_OPEN,
)

THINK_OPEN = "<|open|>think<|sep|>"
THINK_CLOSE = "<|close|>think<|sep|>"
RESPONSE_OPEN = "<|open|>response<|sep|>"
RESPONSE_CLOSE = "<|close|>response<|sep|>"
#: Markup on the content side before the tools channel (each begins with ``<``).
_FRAME = (RESPONSE_OPEN, RESPONSE_CLOSE, K3_MESSAGE_CLOSE, K3_END_OF_MESSAGE)


def _thinks_unless_off(thinking: bool | None) -> Start:
    return Start.OUTSIDE if thinking is False else Start.INSIDE


#: K3 thinks by default; a tools opener inside reasoning is a call only if the block never closes.
FORMAT = ThinkFormat(THINK_OPEN, THINK_CLOSE, K3_REASONING_EXITS, _thinks_unless_off, hold_openers=True)


class KimiK3Splitter:
    """The think channel split off; the response frame dropped from the content."""

    def __init__(self, thinking: bool | None, start: Start | None = None) -> None:
        self._think = ThinkSplitter(FORMAT, thinking, start)
        self._markers = marker_set((*_FRAME, K3_TOOLS_OPEN))
        self._held = ""
        self._passing = False  # from the tools opener on, content passes unread

    @property
    def verbatim(self) -> bool:
        return self._passing and self._think.verbatim

    def feed(self, text: str) -> list[ParsedSegment]:
        segments = self._think.feed(text)
        if self._passing:
            return segments
        if not self._held and len(segments) == 1:
            # The usual delta: one segment, reasoning or text in which no marker can start.
            only = segments[0]
            if type(only) is not Content or "<" not in only.text:
                return segments
        return self._unframe(segments, final=False)

    def finish(self) -> list[ParsedSegment]:
        return self._unframe(self._think.finish(), final=True)

    def _unframe(self, segments: list[ParsedSegment], *, final: bool) -> list[ParsedSegment]:
        if self._passing:
            return segments
        out: list[ParsedSegment] = []
        for segment in segments:
            if isinstance(segment, Content) and not self._passing:
                self._content(out, segment.text, final=False)
            else:
                out.append(segment)
        if final:
            self._content(out, "", final=True)
        return out

    def _content(self, out: list[ParsedSegment], text: str, *, final: bool) -> None:
        buf = self._held + text
        i = 0
        pieces: list[str] = []
        while True:
            pos, marker = self._markers.find(buf, i)
            if pos < 0:
                break
            pieces.append(buf[i:pos])
            if marker == K3_TOOLS_OPEN:
                self._passing = True
                pieces.append(buf[pos:])
                i = len(buf)
                break
            i = pos + len(marker)
        cut = len(buf) if final or self._passing else len(buf) - self._markers.partial_len(buf, i)
        pieces.append(buf[i:cut])
        self._held = buf[cut:]
        joined = "".join(pieces)
        if joined:
            out.append(Content(text=joined))


class KimiK3Factory:
    """``factory(thinking, start)`` for K3; the prompt's tail names the channel it opened."""

    name = "kimi_k3"

    def __call__(self, thinking: bool | None, start: Start | None = None) -> KimiK3Splitter:
        return KimiK3Splitter(thinking, start)

    def start_after(self, prompt: str) -> Start:
        tail = prompt.rstrip()
        if tail.endswith(THINK_OPEN):
            return Start.INSIDE
        if tail.endswith((RESPONSE_OPEN, THINK_CLOSE)):
            return Start.OUTSIDE
        return Start.LEADING_TAG

    def __repr__(self) -> str:
        return "<reasoning splitter kimi_k3>"


register("kimi_k3", KimiK3Factory())

__all__ = ["FORMAT", "KimiK3Factory", "KimiK3Splitter"]
