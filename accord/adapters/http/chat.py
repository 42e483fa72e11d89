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
from accord.adapters.http.reframed import ReframedJson, ReframedSse, options
from accord.adapters.requests import decode_chat_request, normalize_chat
from accord.adapters.runner import Framing
from accord.events.chat_wire import chat_completion, chat_failure
from accord.events.reframe import chat_reframer


async def create_chat_completion(ctx: Context, ex: Exchange) -> None:
    started = time.perf_counter()
    request = decode_chat_request(bytes(await ex.read_body(ctx.max_body_bytes)), ctx.limits)
    ctx.refuse_if_draining()
    conversation = normalize_chat(request, options=options(ctx.service))
    stream = bool(request.stream)
    prepared = ctx.service.prepare_protocol(
        conversation, model=request.model, prefix="chatcmpl", stream=stream, protocol="chat_completions"
    )
    framing: Framing
    if stream:
        include_usage = request.stream_options is not None and bool(request.stream_options.include_usage)
        framing = ReframedSse(ex, chat_reframer(include_usage=include_usage), chat_failure)
    else:
        framing = ReframedJson(ex, chat_completion, chat_failure)
    await ctx.drive(ex, prepared, framing, route="chat_completions", started=started, persist=False)
