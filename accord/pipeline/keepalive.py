"""Keepalive: the only stage that owns a clock (SPEC W8).

While the stream has been silent for ``interval`` seconds it asks the egress for one
more ``response.in_progress``. It never cancels a receive (a cancelled receive could
lose an event); it sleeps on its own and posts ``None`` into the egress channel.
"""

from __future__ import annotations

import anyio
from anyio.abc import ObjectSendStream

from accord.events.wire import WireEvent

#: What travels to the egress: a batch of wire events, or ``None`` for "send a keepalive".
EgressItem = list[WireEvent] | None


class Keepalive:
    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.last_activity = anyio.current_time()
        self.sent = 0
        self._done = anyio.Event()

    def touch(self) -> None:
        """The egress sent something: the silence starts again."""
        self.last_activity = anyio.current_time()

    def stop(self) -> None:
        self._done.set()

    async def run(self, send: ObjectSendStream[EgressItem]) -> None:
        async with send:
            if self.interval <= 0:
                await self._done.wait()
                return
            while not self._done.is_set():
                delay = self.last_activity + self.interval - anyio.current_time()
                if delay > 0:
                    with anyio.move_on_after(delay):
                        await self._done.wait()
                    continue
                self.touch()
                self.sent += 1
                await send.send(None)
