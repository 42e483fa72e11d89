"""``POST /v1/responses``: one request, one ResponseRun, streamed or folded."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from accord.adapters.http.exchange import Exchange, error_body
from accord.adapters.requests import RequestLimits, ResponsesRequest, decode_request
from accord.adapters.service import Prepared
from accord.errors import RequestError
from accord.events.wire import TERMINAL_TYPES, EventLog, WireEvent

if TYPE_CHECKING:
    from accord.adapters.http.app import AccordApp

log = structlog.get_logger("accord.http")

#: Failure codes a non-streamed request answers with, and their HTTP status.
_STATUS_OF_CODE = {"context_length_exceeded": 400, "upstream_error": 502, "server_shutting_down": 503}

Finisher = Callable[[Prepared, EventLog, str], Awaitable[None]]


def termination_cause(log_: EventLog, disconnected: bool) -> str:
    snapshot = log_.snapshot
    if snapshot.terminal is None:
        return "client_disconnected" if disconnected else "aborted"
    if snapshot.status == "failed" and snapshot.error is not None:
        return f"failed:{snapshot.error['code']}"
    return snapshot.status


async def create_response(app: AccordApp, ex: Exchange) -> None:
    started = time.perf_counter()
    # The run stamps its first engine event on the event loop's clock; measure TTFT on the same one.
    loop_started = anyio.current_time()
    settings = app.settings
    body = await ex.read_body(settings.max_body_bytes)
    limits = RequestLimits(
        max_input_items=settings.max_input_items,
        max_tools=settings.max_tools,
        max_string_chars=settings.max_string_chars,
    )
    request: ResponsesRequest = decode_request(body, limits)
    if app.draining:
        raise RequestError(
            "server is shutting down", status=503, code="server_shutting_down", type="server_error"
        )
    prepared = await app.service.prepare(request)
    if request.background:
        # S4: the run outlives this exchange; whoever holds background runs answers it.
        if app.background is None:
            raise RequestError("background responses need a response store", param="background")
        await app.background(app, ex, prepared)
        return
    run = prepared.run
    structlog.contextvars.bind_contextvars(response_id=run.opened.response_id)
    try:
        if request.stream:
            await _stream(app, ex, prepared, started)
        else:
            await _fold(app, ex, prepared)
    finally:
        cause = termination_cause(run.log, ex.disconnected)
        usage = run.log.snapshot.usage
        if usage is not None:
            app.metrics.tokens["input"] += usage.input_tokens
            app.metrics.tokens["cached"] += usage.input_tokens_details.cached_tokens
            app.metrics.tokens["output"] += usage.output_tokens
            app.metrics.tokens["reasoning"] += usage.output_tokens_details.reasoning_tokens
        app.metrics.keepalives += run.keepalives_sent
        if run.first_engine_event_at is not None:
            app.metrics.first_token_count += 1
            app.metrics.first_token_seconds_sum += max(0.0, run.first_engine_event_at - loop_started)
        app.metrics.request("responses", ex.status, cause)
        with anyio.CancelScope(shield=True):
            await app.finish(prepared, run.log, cause)
        log.info(
            "response",
            response_id=run.opened.response_id,
            status=ex.status,
            cause=cause,
            stream=bool(request.stream),
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
            cached_tokens=usage.input_tokens_details.cached_tokens if usage else None,
            reasoning_tokens=usage.output_tokens_details.reasoning_tokens if usage else None,
            keepalives=run.keepalives_sent,
            duration_s=round(time.perf_counter() - started, 4),
            ttft_s=(
                round(run.first_engine_event_at - loop_started, 4) if run.first_engine_event_at else None
            ),
        )
        structlog.contextvars.unbind_contextvars("response_id")


async def _run_watched(
    app: AccordApp, ex: Exchange, prepared: Prepared, emit: Callable[[list[WireEvent]], Awaitable[None]]
) -> None:
    """Run the response; a client disconnect or a shutdown deadline cancels it."""
    run = prepared.run
    shutdown_cancelled = False

    async def committed(events: list[WireEvent]) -> None:
        # The terminal hooks (the store) finish before the client can see the end.
        if events and isinstance(events[-1], TERMINAL_TYPES):
            with anyio.CancelScope(shield=True):
                await app.before_terminal(prepared, run.log)
        await emit(events)

    async with anyio.create_task_group() as tg:

        async def watch_disconnect() -> None:
            await ex.wait_disconnect()
            tg.cancel_scope.cancel()

        async def watch_shutdown() -> None:
            nonlocal shutdown_cancelled
            await app.shutdown_deadline.wait()
            shutdown_cancelled = True
            tg.cancel_scope.cancel()

        tg.start_soon(watch_disconnect)
        tg.start_soon(watch_shutdown)
        await run.run(committed)
        tg.cancel_scope.cancel()
    if shutdown_cancelled and not run.log.terminated and not ex.disconnected:
        await run.end_early("server_shutting_down", "the server is shutting down", committed)


async def _stream(app: AccordApp, ex: Exchange, prepared: Prepared, started: float) -> None:
    await ex.start_sse()
    first = True

    async def emit(events: list[WireEvent]) -> None:
        nonlocal first
        if first:
            first = False
            app.metrics.first_event_count += 1
            app.metrics.first_event_seconds_sum += time.perf_counter() - started
        if not ex.disconnected:
            await ex.sse(events)

    app.stream_opened()
    try:
        await _run_watched(app, ex, prepared, emit)
    finally:
        app.stream_closed()
        if not ex.disconnected:
            with anyio.CancelScope(shield=True):
                await ex.end_sse()


async def _fold(app: AccordApp, ex: Exchange, prepared: Prepared) -> None:
    async def emit(events: list[WireEvent]) -> None:
        return None

    await _run_watched(app, ex, prepared, emit)
    if ex.disconnected:
        return
    snapshot = prepared.run.log.snapshot
    if snapshot.status == "failed" and snapshot.error is not None:
        code = str(snapshot.error["code"])
        status = _STATUS_OF_CODE.get(code, 500)
        err_type = "invalid_request_error" if status == 400 else "server_error"
        await ex.json(
            status, error_body(str(snapshot.error["message"]), type=err_type, param=None, code=code)
        )
        return
    body: dict[str, Any] = snapshot.body()
    await ex.json(200, body)
