"""A stored log back onto the wire, numbered as it was first sent (SPEC S2, W4).

The stream is a projection of the log, so replaying is projecting again: each event is
folded and projected exactly as it was live, and the keepalives are put back at the
sequence numbers they took (the same :class:`Sequencer` numbers them), each carrying the fold as of that point (SPEC W8). The
replayed frames are therefore the bytes the client originally received, keepalives
included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from accord.events.response import ResponseEvent
from accord.events.wire import EventLog, WireEvent
from accord.pipeline.sequencer import Sequencer


def replay(events: Iterable[ResponseEvent], keepalive_seqs: Sequence[int]) -> list[WireEvent]:
    """Every wire event of the log, with the sequence numbers the live stream gave them."""
    log = EventLog()
    keepalives = set(keepalive_seqs)
    sequencer = Sequencer()
    out: list[WireEvent] = []
    sent = 0  # projected events out so far

    def keepalives_due() -> None:
        # Live, a keepalive only falls between batches, so it finds the log folded
        # exactly to where the client is and costs no second fold.
        while sequencer.next in keepalives and log.events:
            out.append(sequencer.stamp(log.keepalive(sent)))

    for event in events:
        keepalives_due()
        for wire in log.append(event):
            keepalives_due()
            out.append(sequencer.stamp(wire))
            sent += 1
    return out


def after(events: Sequence[WireEvent], starting_after: int) -> list[WireEvent]:
    """The events a client that saw up to ``starting_after`` has not seen yet."""
    return [event for event in events if event.sequence_number > starting_after]
