"""The parse stage: engine output -> reasoning split -> tool-call parse -> segments.

Also does the token accounting the Usage needs: generated tokens, and how many of them
fell in reasoning (SPEC W12). A chunk's tokens count as reasoning when most of the text
that chunk released was reasoning; the tokens of a chunk the splitter held back entirely
(a marker, or part of one) go with the next chunk that releases text, so a marker counts
with the text it introduces. The embedded engine sends one token a chunk, so this is
exact there.
"""

from __future__ import annotations

import msgspec

from accord.errors import ProtocolViolation
from accord.events.generation import Chunk, EngineFailed, Finished, GenerationOutput
from accord.pipeline.reasoning import ReasoningSplitter
from accord.pipeline.segments import Content, ParsedSegment, Reasoning
from accord.pipeline.tools import ToolCallParser


class End(msgspec.Struct, frozen=True, kw_only=True):
    """The engine's last word, with the token counts the parse stage measured."""

    outcome: Finished | EngineFailed
    output_tokens: int
    reasoning_tokens: int


class ParseStage:
    """Sans-IO: ``feed(engine event) -> segments (+ End last)``."""

    def __init__(self, splitter: ReasoningSplitter, tools: ToolCallParser) -> None:
        self._splitter = splitter
        self._tools = tools
        # Bound once: the hot path calls them for every engine delta.
        self._split = splitter.feed
        self._parse_tools = tools.feed
        self._output_tokens = 0
        self._counted_chunks = 0
        self._reasoning_tokens = 0
        self._last_was_reasoning = False
        self._pending_tokens = 0
        self._ended = False
        # The splitter passes everything on unread from here: it is skipped.
        self._direct = splitter.verbatim
        # Direct, and the last text released was not reasoning: nothing can count as reasoning
        # any more (only a reasoning segment or the end with reasoning last would), so each
        # delta is only counted and parsed.
        self._settled = self._direct

    def feed(self, event: GenerationOutput) -> list[ParsedSegment | End]:
        if self._ended:
            raise ProtocolViolation("engine event after the end of generation")
        # The hot path: one chunk per engine delta. The common shapes (a splitter that passes
        # text on unread, or one that gives one reasoning segment or one answer segment for
        # the tool parser) skip the general routing and counting loops; they give what those
        # loops give.
        if type(event) is Chunk:
            tokens = len(event.token_ids)
            self._output_tokens += tokens
            if self._settled:
                return self._parse_tools(event.text)  # type: ignore[return-value]
            if self._direct:
                routed = self._parse_tools(event.text)
                if routed:
                    self._count_answer(tokens, routed)
                    self._settled = not self._last_was_reasoning
                else:
                    self._pending_tokens += tokens  # what _count_answer does for nothing released
                return routed  # type: ignore[return-value]
            split = self._split(event.text)
            if len(split) == 1:
                seg = split[0]
                if type(seg) is Reasoning:
                    if seg.text:
                        self._last_was_reasoning = True
                        self._reasoning_tokens += tokens + self._pending_tokens
                        self._pending_tokens = 0
                    else:
                        self._pending_tokens += tokens
                    return split  # type: ignore[return-value]
                if type(seg) is Content and seg.phase is None:
                    routed = self._parse_tools(seg.text)
                    self._count_answer(tokens, routed)
                    self._direct = self._splitter.verbatim
                    return routed  # type: ignore[return-value]
            routed = self._route(split)
            self._count(tokens, routed)
            self._direct = self._splitter.verbatim
            return routed  # type: ignore[return-value]
        match event:
            case Finished() | EngineFailed():
                self._ended = True
                out: list[ParsedSegment | End] = list(self._route(self._splitter.finish()))
                out.extend(self._tools.finish())
                if self._last_was_reasoning:
                    self._reasoning_tokens += self._pending_tokens
                output_tokens = self._output_tokens
                if isinstance(event, Finished) and event.output_tokens is not None:
                    output_tokens = event.output_tokens
                out.append(
                    End(
                        outcome=event,
                        output_tokens=output_tokens,
                        reasoning_tokens=min(self._reasoning_tokens, output_tokens),
                    )
                )
                return out
        raise ProtocolViolation(f"not an engine event: {event!r}")

    def _route(self, segments: list[ParsedSegment]) -> list[ParsedSegment]:
        routed: list[ParsedSegment] = []
        for seg in segments:
            if isinstance(seg, Content) and seg.phase is None:
                routed.extend(self._tools.feed(seg.text))
            else:
                routed.append(seg)
        return routed

    def _count_answer(self, tokens: int, routed: list[ParsedSegment]) -> None:
        """``_count`` for segments that hold no reasoning (what the tool parser gives)."""
        for seg in routed:
            if type(seg) is not Content or seg.text:
                self._last_was_reasoning = False
                self._pending_tokens = 0
                return
        self._pending_tokens += tokens

    def _count(self, tokens: int, segments: list[ParsedSegment]) -> None:
        reasoning = other = 0
        for s in segments:  # (no segment type has subclasses: ``type() is`` is isinstance, cheaper)
            if type(s) is Reasoning:
                reasoning += len(s.text)
            elif type(s) is Content:
                other += len(s.text)
            else:
                other += 1
        if not (reasoning or other):
            self._pending_tokens += tokens
            return
        self._last_was_reasoning = reasoning >= other
        if self._last_was_reasoning:
            self._reasoning_tokens += tokens + self._pending_tokens
        self._pending_tokens = 0
