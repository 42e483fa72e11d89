"""The HTTP framings of a run in another protocol (Chat Completions, Messages).

Both are :class:`~accord.adapters.runner.Framing` s over the same Responses run: the
streamed one passes every stamped batch through a
:class:`~accord.events.reframe.Reframer`, the whole-body one renders the fold at the end.

The streamed framing holds the response head until the run has something to say beyond
its opening pair: the engine's first event, or the first keepalive tick. A run that fails
before then (an over-long prompt is the case that matters: Claude Code compacts on
Anthropic's 400 ``prompt is too long``) is answered as an HTTP error with the protocol's
body, as ``/v1/completions`` answers it. Waiting for the keepalive tick as well keeps a
long prefill alive: the head and the first keepalive go out together, and a failure after
that is the protocol's in-stream error (``error`` event, or an error chunk), then a clean
end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from accord.adapters.http.context import Context
from accord.adapters.http.exchange import Exchange
from accord.adapters.http.framing import OnExchange, WholeBody
from accord.adapters.requests import Conversation, NormalizeOptions
from accord.adapters.runner import Framing, Outcome
from accord.adapters.service import Service
from accord.events.response import Snapshot
from accord.events.wire import EventLog, WireEvent
from accord.pipeline.run import ResponseRun

#: The protocol's error answer for a run that failed before anything was sent.
Failure = Callable[[Snapshot], tuple[int, dict[str, Any]]]
#: The protocol's whole body, the fold rendered.
Body = Callable[[Snapshot], dict[str, Any]]


class Reframes(Protocol):
    def feed(self, batch: list[WireEvent], log: EventLog) -> bytes: ...


class ReframedSse(OnExchange):
    """``stream: true``: each batch as the protocol's frames, the head held as described above."""

    streaming = True

    def __init__(self, ex: Exchange, reframer: Reframes, failure: Failure) -> None:
        super().__init__(ex)
        self._reframer = reframer
        self._failure = failure
        self._run: ResponseRun | None = None

    async def open(self, run: ResponseRun) -> None:
        self._run = run

    async def send(self, events: list[WireEvent]) -> None:
        run = self._run
        if run is None or self.ex.disconnected:
            return
        log_ = run.log
        if not self.ex.started:
            if log_.terminated and _failed_before_output(log_.snapshot):
                await self.ex.json(*self._failure(log_.snapshot))
                return
            if len(log_.events) == 1 and run.keepalives_sent == 0:
                return  # only the opening pair so far: hold the head
            await self.ex.start_sse()
        await self.ex.send_body(self._reframer.feed(events, log_))

    async def close(self, outcome: Outcome) -> None:
        ex = self.ex
        if ex.disconnected or outcome.raised:
            if ex.started and ex.status == 200 and not ex.disconnected:
                await ex.send_body(b"", more=False)
            return
        if not ex.started:
            # Stopped before anything was sent (the client left, or nothing was emitted).
            return
        if ex.status == 200:
            await ex.send_body(b"", more=False)


class ReframedJson(WholeBody):
    """``stream: false``: the protocol's body or error, once the run has ended."""

    def __init__(self, ex: Exchange, body: Body, failure: Failure) -> None:
        super().__init__(ex)
        self._body = body
        self._failure = failure

    async def close(self, outcome: Outcome) -> None:
        if outcome.raised or self.ex.disconnected:
            return
        snapshot = outcome.snapshot
        if snapshot.terminal is None:
            return  # stopped without an end (the client went away)
        if snapshot.status in ("failed", "cancelled"):
            await self.ex.json(*self._failure(snapshot))
            return
        await self.ex.json(200, self._body(snapshot))


def _failed_before_output(snapshot: Snapshot) -> bool:
    """A run that ended failed or cancelled without one output item: an HTTP error, not a stream."""
    return snapshot.status in ("failed", "cancelled") and not snapshot.items


def options(service: Service) -> NormalizeOptions:
    """How this server normalises a request of any protocol (no stored items to reference)."""
    return NormalizeOptions(web_search=service.web_search, vision=service.vision, sealer=service.sealer)


async def drive_projected(
    ctx: Context,
    ex: Exchange,
    conversation: Conversation,
    *,
    protocol: str,
    model: str | None,
    stream: bool,
    frames: Callable[[], Reframes],
    body: Body,
    failure: Failure,
    started: float,
) -> None:
    """Run ``conversation`` and answer it in ``protocol``: streamed through ``frames()``, or as
    the ``body`` of its fold; ``failure`` answers a run that failed before anything was sent."""
    ctx.refuse_if_draining()
    prepared = ctx.service.prepare_protocol(conversation, model=model, stream=stream, protocol=protocol)
    framing: Framing = ReframedSse(ex, frames(), failure) if stream else ReframedJson(ex, body, failure)
    await ctx.drive(ex, prepared, framing, route=protocol, started=started, persist=False)
