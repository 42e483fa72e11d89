"""``POST /v1/responses``: one request, one run, streamed or folded (or left running, S4)."""

from __future__ import annotations

import time

from accord.adapters.http.context import Context
from accord.adapters.http.exchange import Exchange
from accord.adapters.http.framing import JsonFraming, SseFraming
from accord.errors import RequestError


async def create_response(ctx: Context, ex: Exchange) -> None:
    started = time.perf_counter()
    request = await ctx.read_request(ex)
    if request.background and ctx.background is None:
        raise RequestError("background responses need a response store", param="background")
    ticket = await ctx.admit()
    try:
        prepared = await ctx.service.prepare(request)
        if request.background and ctx.background is not None:
            # S4: the run outlives this exchange and keeps the ticket until it ends.
            held, ticket = ticket, None
            await ctx.background.start(ex, prepared, ticket=held)
            return
        framing = SseFraming(ex) if request.stream else JsonFraming(ex)
        await ctx.drive(ex, prepared, framing, started=started)
    finally:
        if ticket is not None:
            ticket.release()
