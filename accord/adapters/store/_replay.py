"""A stored log back onto the wire, numbered as it was first sent (SPEC S2, W4).

The stream is a projection of the log, so replaying is projecting again: each event is
folded and projected exactly as it was live, and the keepalives are put back at the
sequence numbers they took. The replayed frames are therefore the bytes the client
originally received, keepalives included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from accord.events.response import ResponseEvent
from accord.events.wire import EventLog, ResponseInProgress, WireEvent


def replay(events: Iterable[ResponseEvent], keepalive_seqs: Sequence[int]) -> list[WireEvent]:
    """Every wire event of the log, with the sequence numbers the live stream gave them."""
    log = EventLog()
    projected: list[WireEvent] = []
    for event in events:
        projected.extend(log.append(event))
    keepalives = set(keepalive_seqs)
    out: list[WireEvent] = []
    pending = iter(projected)
    remaining = len(projected)
    seq = 0
    while remaining:
        if seq in keepalives and log.opening is not None:
            out.append(ResponseInProgress(response=log.opening, sequence_number=seq))
        else:
            out.append(msgspec.structs.replace(next(pending), sequence_number=seq))
            remaining -= 1
        seq += 1
    return out


def after(events: Sequence[WireEvent], starting_after: int) -> list[WireEvent]:
    """The events a client that saw up to ``starting_after`` has not seen yet."""
    return [event for event in events if event.sequence_number > starting_after]
