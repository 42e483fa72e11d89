"""``POST /v1/chat/completions``: a Responses run, projected onto Chat Completions.

The request normalises into the same :class:`~accord.adapters.requests.Conversation` a
Responses request does, and runs the same chain; only the framing differs (chunks through
:func:`~accord.events.reframe.chat_reframer`, or the fold as one ``chat.completion``).
Errors are OpenAI's shape, as for every other route of the app.
"""

from __future__ import annotations

import time

from accord.adapters.http.context import Context
from accord.adapters.http.exchange import Exchange
from accord.adapters.http.reframed import drive_projected, options
from accord.adapters.requests import decode_chat_request, normalize_chat
from accord.events.chat_wire import chat_completion, chat_failure
from accord.events.reframe import chat_reframer


async def create_chat_completion(ctx: Context, ex: Exchange) -> None:
    started = time.perf_counter()
    request = await ctx.read_body_as(ex, decode_chat_request)
    include_usage = request.stream_options is not None and bool(request.stream_options.include_usage)
    await drive_projected(
        ctx,
        ex,
        normalize_chat(request, options=options(ctx.service)),
        protocol="chat_completions",
        model=request.model,
        stream=bool(request.stream),
        frames=lambda: chat_reframer(include_usage=include_usage),
        body=chat_completion,
        failure=chat_failure,
        started=started,
    )
