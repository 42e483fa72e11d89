"""Sequencer: stamps ``sequence_number`` 0, 1, 2, ... at the single egress (SPEC W4)."""

from __future__ import annotations

import msgspec

from accord.events.wire import WireEvent


class Sequencer:
    def __init__(self) -> None:
        self.next = 0

    def stamp(self, event: WireEvent) -> WireEvent:
        stamped = msgspec.structs.replace(event, sequence_number=self.next)
        self.next += 1
        return stamped
