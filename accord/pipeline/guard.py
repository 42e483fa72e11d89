"""TerminalGuard: exactly one terminal event, and nothing after it (SPEC W5, invariant 3).

States are a table: OPEN -> COMPLETED | INCOMPLETE | FAILED | CANCELLED. An event
after a terminal one is a bug upstream and raises ``ProtocolViolation``; the guard never
repairs it silently.
"""

from __future__ import annotations

import enum

from accord.errors import ProtocolViolation
from accord.events.wire import (
    ResponseCancelled,
    ResponseCompleted,
    ResponseFailed,
    ResponseIncomplete,
    WireEvent,
)


class StreamState(enum.Enum):
    OPEN = "open"
    COMPLETED = "completed"
    INCOMPLETE = "incomplete"
    FAILED = "failed"
    CANCELLED = "cancelled"


_TRANSITIONS: dict[type[WireEvent], StreamState] = {
    ResponseCompleted: StreamState.COMPLETED,
    ResponseIncomplete: StreamState.INCOMPLETE,
    ResponseFailed: StreamState.FAILED,
    ResponseCancelled: StreamState.CANCELLED,
}


class TerminalGuard:
    def __init__(self) -> None:
        self.state = StreamState.OPEN

    @property
    def terminated(self) -> bool:
        return self.state is not StreamState.OPEN

    def check(self, event: WireEvent) -> WireEvent:
        if self.state is not StreamState.OPEN:
            raise ProtocolViolation(f"{type(event).__name__} after the terminal event ({self.state.value})")
        self.state = _TRANSITIONS.get(type(event), StreamState.OPEN)
        return event
