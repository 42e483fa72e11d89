"""The vocabulary between the parsers and the ItemTracker.

A reasoning splitter turns raw model text into :class:`Reasoning` and :class:`Content`
segments; a tool-call parser turns :class:`Content` into :class:`Content` and call
segments. A call comes whole, as one :class:`ToolCall`, once it has completed and its
arguments are valid (SPEC P4); a call that never completes is released as text.
Concatenating the text of every segment a parser emitted, plus the raw markup of every
call, gives back exactly what it was fed (nothing is lost, SPEC invariant 5).

:func:`merge_segments` is the form in which chunkings are compared: adjacent text of one
kind joined.

:class:`ToolSpec` is how a parser sees the tools a request offered: the name the model
was told to use (``namespace.tool`` for namespaced tools), and the JSON schema of the
arguments (custom tools have one string parameter named ``input``, SPEC P10).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec

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


#: What parsers emit.
ParsedSegment = Reasoning | Content | ToolCall
#: What :func:`merge_segments` gives: adjacent text of one kind joined.
MergedSegment = ParsedSegment


def merge_segments(segments: Sequence[ParsedSegment]) -> list[MergedSegment]:
    """Join adjacent text segments of the same kind and drop empty ones, so chunkings can be compared."""
    merged: list[MergedSegment] = []
    for seg in segments:
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
    return merged
