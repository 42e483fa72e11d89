"""What the audit says about one stream: its defects and the units the census counts them against."""

from __future__ import annotations

from typing import Literal

import msgspec

from accord.replay.defects import Unit

VerdictStatus = Literal["sound", "defective", "unreadable", "skipped"]


class Defect(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    code: str
    detail: str
    #: The item it concerns, when it concerns one (item-level census classes count distinct items).
    output_index: int | None = None
    item_id: str | None = None
    #: The openai SDK streaming helper raises on this (while iterating, or at the end for a missing terminal).
    breaks_sdk: bool = False
    #: Characters of text one view has and another lacks (reasoning tail lost).
    lost_chars: int = 0


class Verdict(msgspec.Struct, kw_only=True, omit_defaults=True):
    source: str
    status: VerdictStatus
    #: ``sse`` (a captured event stream), ``trace`` (an accord trace) or ``response`` (a non-streamed body).
    format: str = ""
    response_id: str | None = None
    #: The terminal event type, when there was one.
    terminal: str | None = None
    events: int = 0
    defects: list[Defect] = msgspec.field(default_factory=list)
    #: How many of each census unit this stream contributes (streams, responses, reasoning items, ...).
    units: dict[Unit, int] = msgspec.field(default_factory=dict)
    #: Total reasoning characters (the longest view of each reasoning part), for the lost-text share.
    reasoning_chars: int = 0
    notes: list[str] = msgspec.field(default_factory=list)
    #: Why the input was unreadable or skipped.
    reason: str | None = None

    @property
    def breaks_sdk(self) -> bool:
        return any(d.breaks_sdk for d in self.defects)

    def codes(self) -> set[str]:
        return {d.code for d in self.defects}


def finish_verdict(verdict: Verdict) -> Verdict:
    """Settle the status from the defects found."""
    if verdict.status in ("sound", "defective"):
        verdict.status = "defective" if verdict.defects else "sound"
    return verdict
