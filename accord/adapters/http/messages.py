"""``POST /v1/messages`` and ``POST /v1/messages/count_tokens``: Anthropic's Messages API.

A Messages request normalises into the same Conversation as the other two protocols and
runs the same chain; the stream is the Messages projection of the run's log
(:func:`~accord.events.reframe.messages_reframer`, ``ping`` as the keepalive), the whole
body the fold rendered as one ``message``.

Every error on these paths is Anthropic's shape, ``{"type": "error", "error": {"type",
"message"}}``: the request's own (a field named in the message, as Anthropic words it:
``messages.0.content: ...``), the app's (auth, routing) through :func:`anthropic_error`,
and a run's failure before the stream opened (:func:`~accord.events.messages_wire.messages_failure`).
"""

from __future__ import annotations

import time
from typing import Any

from accord.adapters.http.context import Context
from accord.adapters.http.exchange import Exchange
from accord.adapters.http.reframed import drive_projected, options
from accord.adapters.requests import decode_count_tokens_request, decode_messages_request, normalize_messages
from accord.errors import RequestError
from accord.events.messages_wire import count_tokens_body, error_body, message_body, messages_failure
from accord.events.reframe import messages_reframer

#: Paths whose errors are answered in Anthropic's shape.
PREFIX = "/v1/messages"


def anthropic_error(exc: RequestError) -> tuple[int, dict[str, Any]]:
    """A refused request as Anthropic answers it; the message names the field it is about."""
    message = exc.message
    if exc.param and f"'{exc.param}'" not in message:
        message = f"{exc.param}: {message}"
    return exc.status, error_body(message, status=exc.status)


async def create_message(ctx: Context, ex: Exchange) -> None:
    """Errors raised here reach the app, which answers them in Anthropic's shape on this path."""
    started = time.perf_counter()
    request = await ctx.read_body_as(ex, decode_messages_request)
    conversation = normalize_messages(request, options=options(ctx.service))
    stops = conversation.stop
    await drive_projected(
        ctx,
        ex,
        conversation,
        protocol="messages",
        model=request.model,
        stream=bool(request.stream),
        frames=lambda: messages_reframer(stops),
        body=lambda snapshot: message_body(snapshot, stops),
        failure=messages_failure,
        started=started,
    )


async def count_message_tokens(ctx: Context, ex: Exchange) -> None:
    request = await ctx.read_body_as(ex, decode_count_tokens_request)
    conversation = normalize_messages(request, options=options(ctx.service))
    service = ctx.service
    count = await service.engine.count_tokens(service.renderer.render(conversation))
    await ex.json(200, count_tokens_body(count))
