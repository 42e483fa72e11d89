"""A stored log back onto the wire, numbered as it was first sent (SPEC S2, W4).

The stream is a projection of the log, so replaying is projecting again: each event is
folded and projected exactly as it was live, and the same :class:`Sequencer` numbers it,
with the keepalives put back at the sequence numbers they took. The replayed frames are
therefore the bytes the client originally received, keepalives included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from accord.events.response import ResponseEvent
from accord.events.wire import EventLog, WireEvent, keepalive_event
from accord.pipeline.sequencer import Sequencer


def replay(events: Iterable[ResponseEvent], keepalive_seqs: Sequence[int]) -> list[WireEvent]:
    """Every wire event of the log, with the sequence numbers the live stream gave them."""
    log = EventLog()
    projected: list[WireEvent] = []
    for event in events:
        projected.extend(log.append(event))
    keepalives = set(keepalive_seqs)
    sequencer = Sequencer()
    out: list[WireEvent] = []
    for wire in projected:
        # A keepalive never comes before the opening (the log says so), nor after the end.
        while sequencer.next in keepalives and log.opening is not None:
            out.append(sequencer.stamp(keepalive_event(log)))
        out.append(sequencer.stamp(wire))
    return out


def after(events: Sequence[WireEvent], starting_after: int) -> list[WireEvent]:
    """The events a client that saw up to ``starting_after`` has not seen yet."""
    return [event for event in events if event.sequence_number > starting_after]
