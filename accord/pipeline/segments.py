"""The vocabulary between the parsers and the ItemTracker.

A reasoning splitter turns raw model text into :class:`Reasoning` and :class:`Content`
segments; a tool-call parser turns :class:`Content` into :class:`Content` and call
segments. A call comes either whole, as one :class:`ToolCall`, or streamed: a
:class:`CallOpened`, zero or more :class:`CallArguments` and then exactly one
:class:`CallClosed` (the arguments are complete, valid JSON) or :class:`CallAbandoned` (they
stopped being JSON, or the output ended inside them), with no other segment of that parser
in between. Concatenating the text of every segment a parser emitted, plus the raw markup
of every call, gives back exactly what it was fed (nothing is lost, SPEC invariant 5): an
abandoned call holds its markup and the argument text it streamed, and the parser reads
on as text right after that.

:func:`merge_segments` is the form in which chunkings are compared: a streamed call that
closed becomes the :class:`ToolCall` a whole parse reports, and one that was abandoned an
:class:`AbandonedCall` (which only ``merge_segments`` makes).

:class:`ToolSpec` is how a parser sees the tools a request offered: the name the model
was told to use (``namespace.tool`` for namespaced tools), and the JSON schema of the
arguments (custom tools have one string parameter named ``input``, SPEC P10).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from accord.errors import ProtocolViolation

ToolKind = Literal["function", "custom"]


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One tool offered to the model, in the flat shape every parser reads (docs/model-formats.md B14 #10)."""

    #: The name as offered to the model: ``tool`` or ``namespace.tool``.
    name: str
    kind: ToolKind = "function"
    #: JSON schema of the arguments object (``None``: undeclared, anything goes).
    parameters: dict[str, Any] | None = None
    description: str | None = None
    #: The namespace the tool came from (its name then starts with ``namespace.``).
    namespace: str | None = None
    strict: bool | None = None

    @property
    def bare_name(self) -> str:
        """The tool's own name, without its namespace qualifier."""
        if self.namespace and self.name.startswith(self.namespace + "."):
            return self.name[len(self.namespace) + 1 :]
        return self.name


class Segment(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    """Base of the closed union of parser outputs."""


class Reasoning(Segment, frozen=True, tag="reasoning"):
    text: str


class Content(Segment, frozen=True, tag="content"):
    text: str
    #: ``"commentary"`` for gpt-oss preambles; ``None`` for the ordinary answer.
    phase: Literal["commentary", "final_answer"] | None = None


class ToolCall(Segment, frozen=True, tag="tool_call"):
    """A complete call: the declared name (as offered) and its arguments as a JSON object text."""

    name: str
    arguments: str
    #: The model's own call id where the format has one (Kimi ``functions.f:0``), else ``None``.
    call_id: str | None = None


class CallOpened(Segment, frozen=True, tag="call_opened"):
    """A streamed call begins: its name resolved to a declared tool, its arguments begun."""

    name: str
    call_id: str | None = None


class CallArguments(Segment, frozen=True, tag="call_arguments"):
    """More of the open call's arguments, exactly as the model wrote them."""

    delta: str


class CallClosed(Segment, frozen=True, tag="call_closed"):
    """The open call's arguments are complete: the deltas join into one valid JSON object."""


class CallAbandoned(Segment, frozen=True, tag="call_abandoned"):
    """The open call will not complete: its arguments stopped being JSON, or the output ended."""


class AbandonedCall(Segment, frozen=True, tag="abandoned_call"):
    """Merged form of a streamed call that was abandoned, with the arguments it streamed."""

    name: str
    arguments: str
    call_id: str | None = None


#: What parsers emit.
ParsedSegment = Reasoning | Content | ToolCall | CallOpened | CallArguments | CallClosed | CallAbandoned
#: What :func:`merge_segments` gives: text joined, each streamed call folded into one segment.
MergedSegment = Reasoning | Content | ToolCall | AbandonedCall


def merge_segments(segments: Sequence[ParsedSegment]) -> list[MergedSegment]:
    """Join adjacent text segments of the same kind and fold streamed calls, so chunkings can be compared.

    A streamed call takes the place of its :class:`CallOpened`, whatever came between its
    segments from other stages.
    """
    merged: list[MergedSegment] = []
    opened: CallOpened | None = None
    at = 0
    pieces: list[str] = []
    for seg in segments:
        match seg:
            case CallOpened():
                if opened is not None:
                    raise ProtocolViolation("a call opened inside another")
                opened, at, pieces = seg, len(merged), []
                merged.append(AbandonedCall(name=seg.name, arguments="", call_id=seg.call_id))
                continue
            case CallArguments():
                if opened is None:
                    raise ProtocolViolation("call arguments outside a call")
                pieces.append(seg.delta)
                continue
            case CallClosed() | CallAbandoned():
                if opened is None:
                    raise ProtocolViolation("a call ended that was not open")
                kind = ToolCall if isinstance(seg, CallClosed) else AbandonedCall
                merged[at] = kind(name=opened.name, arguments="".join(pieces), call_id=opened.call_id)
                opened = None
                continue
        if merged:
            last = merged[-1]
            if isinstance(seg, Reasoning) and isinstance(last, Reasoning):
                merged[-1] = Reasoning(text=last.text + seg.text)
                continue
            if isinstance(seg, Content) and isinstance(last, Content) and seg.phase == last.phase:
                merged[-1] = Content(text=last.text + seg.text, phase=seg.phase)
                continue
        if isinstance(seg, (Reasoning, Content)) and not seg.text:
            continue
        merged.append(seg)
    if opened is not None:
        raise ProtocolViolation("a call is still open")
    return merged
