"""Admission control: how many generation requests run at once, and how many may wait (SPEC I11).

Theory of operation. Every request that makes the engine work (a response, streamed or not,
a background run, a completion, a compaction) holds one :class:`Ticket` from the moment it
is admitted until its run is over; a background run keeps the ticket its POST took until
the run ends. At most ``max_active`` tickets are out. A request that finds them all taken
waits, in arrival order, if fewer than ``max_waiting`` are waiting already, for at most
``queue_timeout`` seconds; otherwise, or when the wait runs out, it is refused at once with
429 and ``Retry-After`` (503 while the server drains), and no request hangs behind a full
queue. The count is in this process: each process behind a load balancer admits its own.
"""

from __future__ import annotations

import math

import anyio

from accord.engine.protocol import EngineCapabilities
from accord.errors import Overloaded

#: The active limit when the engine does not say how many requests it batches.
DEFAULT_MAX_ACTIVE = 64


def default_max_active(capabilities: EngineCapabilities) -> int:
    """Twice the engine's batch (so its own queue stays fed), where the engine declares one."""
    batch = capabilities.max_batch
    return 2 * batch if batch is not None and batch > 0 else DEFAULT_MAX_ACTIVE


class Ticket:
    """One admitted request's place; :meth:`release` gives it back (once, whoever calls it)."""

    def __init__(self, admission: Admission) -> None:
        self._admission: Admission | None = admission

    def release(self) -> None:
        admission, self._admission = self._admission, None
        if admission is not None:
            admission._limiter().release_on_behalf_of(self)


class Admission:
    def __init__(
        self, max_active: int, max_waiting: int, *, queue_timeout: float, retry_after: float
    ) -> None:
        self.max_active = max_active
        self.max_waiting = max_waiting
        self.queue_timeout = queue_timeout
        self.retry_after = retry_after
        self.waiting = 0
        self._tokens: anyio.CapacityLimiter | None = None

    def _limiter(self) -> anyio.CapacityLimiter:
        # Made on first use inside the event loop (the app is built before the loop runs).
        if self._tokens is None:
            self._tokens = anyio.CapacityLimiter(self.max_active)
        return self._tokens

    @property
    def active(self) -> int:
        return self._limiter().borrowed_tokens

    def _refuse(self, draining: bool) -> Overloaded:
        seconds = max(1, math.ceil(self.retry_after))
        if draining:
            return Overloaded(
                "The server is shutting down.", status=503, retry_after=seconds, code="server_shutting_down"
            )
        return Overloaded(
            f"The server is at capacity ({self.max_active} requests running, {self.waiting} waiting); "
            "retry later.",
            retry_after=seconds,
        )

    async def admit(self, *, draining: bool = False) -> Ticket:
        """A ticket, once one is free; raises :class:`Overloaded` rather than wait past the limits."""
        if draining:
            raise self._refuse(True)
        limiter = self._limiter()
        ticket = Ticket(self)
        try:
            limiter.acquire_on_behalf_of_nowait(ticket)
            return ticket
        except anyio.WouldBlock:
            pass
        if self.waiting >= self.max_waiting:
            raise self._refuse(False)
        self.waiting += 1
        try:
            with anyio.move_on_after(self.queue_timeout):
                await limiter.acquire_on_behalf_of(ticket)
                return ticket
        finally:
            self.waiting -= 1
        raise self._refuse(False)
