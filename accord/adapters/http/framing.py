"""The Responses API's two HTTP framings of a run: an SSE stream, or one JSON body.

Each is a :class:`~accord.adapters.runner.Framing`: the run driver hands it the stamped
batches and the outcome, and it owns nothing else. A failure code becomes one HTTP status
here for every route that answers with a body (:func:`failure_status`).
"""

from __future__ import annotations

from accord.adapters.http.exchange import Exchange, error_body
from accord.adapters.runner import Outcome, Stop, Watcher
from accord.events.wire import WireEvent
from accord.pipeline.run import ResponseRun

#: Failure codes with an HTTP status other than 500 (every other code is a server error).
_STATUS_OF_CODE = {"context_length_exceeded": 400, "upstream_error": 502, "server_shutting_down": 503}


def failure_status(code: str) -> tuple[int, str]:
    """The HTTP status and error type of a failure answered as a body rather than a stream."""
    status = _STATUS_OF_CODE.get(code, 500)
    return status, "invalid_request_error" if status == 400 else "server_error"


def client_gone(ex: Exchange) -> Watcher:
    """The watcher that stops a run when this exchange's client goes away."""

    async def watch() -> Stop:
        await ex.wait_disconnect()
        return Stop.CLIENT_GONE

    return watch


class OnExchange:
    """A framing that answers one HTTP exchange: its status is the exchange's."""

    def __init__(self, ex: Exchange) -> None:
        self.ex = ex

    @property
    def status(self) -> int:
        return self.ex.status


class SseFraming(OnExchange):
    """``stream: true``: every batch as SSE frames, and a clean end of the body."""

    streaming = True

    async def open(self, run: ResponseRun) -> None:
        await self.ex.start_sse()

    async def send(self, events: list[WireEvent]) -> None:
        if not self.ex.disconnected:
            await self.ex.sse(events)

    async def close(self, outcome: Outcome) -> None:
        if self.ex.started and not self.ex.disconnected:
            await self.ex.end_sse()


class WholeBody(OnExchange):
    """``stream: false`` of any protocol: nothing while the run goes, one answer at ``close``."""

    streaming = False

    async def open(self, run: ResponseRun) -> None:
        return None

    async def send(self, events: list[WireEvent]) -> None:
        return None


class JsonFraming(WholeBody):
    """The fold as one Responses body (or its error)."""

    async def close(self, outcome: Outcome) -> None:
        if outcome.raised or self.ex.disconnected:
            return
        snapshot = outcome.snapshot
        if snapshot.status == "failed" and snapshot.error is not None:
            code = str(snapshot.error["code"])
            status, kind = failure_status(code)
            await self.ex.json(
                status, error_body(str(snapshot.error["message"]), type=kind, param=None, code=code)
            )
            return
        await self.ex.json(200, snapshot.body())
