"""What a route handler may use: the narrow context every handler receives instead of the app.

Handlers are ``async def handler(ctx: Context, ex: Exchange) -> None``. The context is built
once by the composition root (:mod:`accord.adapters.build`) and never changed afterwards.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from accord.adapters.http.admission import Admission, Ticket
from accord.adapters.http.background import BackgroundRuns
from accord.adapters.http.exchange import Exchange
from accord.adapters.http.framing import client_gone
from accord.adapters.http.offload import BodyDecoder, Decoder
from accord.adapters.requests import RequestLimits, ResponsesRequest, decode_request
from accord.adapters.runner import Framing, Outcome, Runner
from accord.adapters.service import Prepared, Service
from accord.adapters.store import ResponseStore
from accord.errors import Overloaded

#: The write timeout after the shutdown deadline: the last frames of a stream whose client
#: does not read are given this long before the stream is given up.
SHUTDOWN_WRITE_S = 0.5


T = TypeVar("T")


@dataclass(frozen=True)
class Context:
    service: Service
    runner: Runner
    limits: RequestLimits
    max_body_bytes: int
    #: The model ids ``/v1/models`` lists.
    model_names: Callable[[], Awaitable[list[str]]]
    #: Stored responses; None when the server runs without a store.
    store: ResponseStore | None = None
    #: Runs ``background: true`` requests; None where nothing can hold them (no store).
    background: BackgroundRuns | None = None
    #: Decodes large bodies off the event loop; None: every body is decoded in place.
    decoder: Decoder | None = None
    #: Bounds the generation requests running and waiting; None: no bound.
    admission: Admission | None = None
    #: Seconds a request body may take to arrive (None: no limit).
    body_timeout: float | None = None
    #: Seconds one write may wait for a client that does not read (None: no limit).
    write_timeout: float | None = None

    def write_budget(self) -> float | None:
        """The write timeout now: short once the shutdown deadline has passed, so the exit is prompt."""
        if self.runner.lifecycle.shutdown_deadline.is_set():
            return min(SHUTDOWN_WRITE_S, self.write_timeout or SHUTDOWN_WRITE_S)
        return self.write_timeout

    def refuse_if_draining(self) -> None:
        if self.runner.lifecycle.draining:
            raise Overloaded(
                "server is shutting down", status=503, retry_after=5, code="server_shutting_down"
            )

    async def admit(self) -> Ticket | None:
        """A place among the running requests (429/503 when there is none); None without a bound."""
        if self.admission is None:
            self.refuse_if_draining()
            return None
        return await self.admission.admit(draining=self.runner.lifecycle.draining)

    async def drive(
        self,
        ex: Exchange,
        prepared: Prepared,
        framing: Framing,
        *,
        route: str = "responses",
        started: float | None = None,
        persist: bool = True,
        trace: bool = True,
    ) -> Outcome:
        """Run ``prepared`` on the run driver for this exchange, until it ends or the client leaves.

        The driver logs one ``response`` line for the run, whatever its protocol or framing; the
        exchange is marked as driven here, at the one place a handler hands its run over, so the
        app logs no access line of its own for it (a request refused before this point logs one).
        """
        ex.driven = True
        return await self.runner.drive(
            prepared,
            framing,
            watchers=[client_gone(ex)],
            route=route,
            started=started,
            persist=persist,
            trace=trace,
        )

    async def read_request(self, ex: Exchange) -> ResponsesRequest:
        """The body of a Responses request, decoded under the server's limits."""
        return await self.read_body_as(ex, decode_request)

    async def read_body_as(self, ex: Exchange, decode: BodyDecoder[T]) -> T:
        """The body decoded by ``decode`` under the server's limits, a large one off the event loop."""
        body = await ex.read_body(self.max_body_bytes)
        if self.decoder is not None:
            return await self.decoder.decode(body, decode)
        return decode(body, self.limits)


Handler = Callable[[Context, Exchange], Awaitable[None]]
