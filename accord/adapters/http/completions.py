"""``POST /v1/completions``: any engine as an OpenAI-compatible completions server.

This is the raw-text surface that inference servers offer (vLLM's shape, extensions
included), so one accord can front another: the remote engine speaks exactly this.
The prompt is text or token ids and goes to the engine untouched -- no template, no
parsing -- and the answer is the engine's text with, on request, its token ids
(``return_token_ids``, as vLLM returns them).

Errors before generation get an HTTP status and an OpenAI-shaped body: a prompt that
does not fit is a 400 with code ``context_length_exceeded`` and the engine's own
message. To make that possible for streamed requests too, the response starts only
once the engine's first event is known -- an inference server sends nothing before its
first token either. A failure after the stream started is a ``data: {"error": ...}``
event followed by ``[DONE]``, as vLLM sends it. A client that goes away cancels the
generation.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any

import anyio
import msgspec
import structlog

from accord.adapters.http.context import Context
from accord.adapters.http.exchange import Exchange, error_body
from accord.adapters.http.framing import client_gone, failure_status
from accord.adapters.runner import Stop
from accord.engine.protocol import Engine, GenerationRequest, PromptTokenizer, RequestHints, Sampling
from accord.errors import NoHealthyUpstream, RequestError
from accord.events.generation import Chunk, EngineFailed, Finished, GenerationOutput

log = structlog.get_logger("accord.http")

_json = msgspec.json.Encoder()
_DONE = b"data: [DONE]\n\n"
#: Failure kinds whose message is the engine's own words and may be shown (SPEC W6).
_SHOWN = frozenset({"context_length_exceeded", "engine_error"})


class StreamOptions(msgspec.Struct, kw_only=True):
    include_usage: bool = False


class CompletionRequest(msgspec.Struct, kw_only=True):
    prompt: Any = None
    model: str | None = None
    #: Absent means OpenAI's default of 16; an explicit null means "up to the context length".
    max_tokens: int | msgspec.UnsetType | None = msgspec.UNSET
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = 1
    echo: bool = False
    logprobs: int | None = None
    best_of: int | None = None
    suffix: str | None = None
    return_token_ids: bool = False


_decode = msgspec.json.Decoder(CompletionRequest)


def _request(raw: bytes | bytearray) -> CompletionRequest:
    try:
        request = _decode.decode(raw)
    except msgspec.ValidationError as exc:
        path = str(exc).rpartition("at `$.")[2].rstrip("`") if "at `$." in str(exc) else None
        raise RequestError(f"invalid request: {exc}", param=path) from None
    except msgspec.DecodeError as exc:
        raise RequestError(f"request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise RequestError("request body is nested too deeply", code="invalid_json") from None
    for name, bad, why in (
        ("n", request.n != 1, "only n=1 is supported"),
        ("echo", request.echo, "echo is not supported"),
        ("logprobs", request.logprobs is not None, "logprobs are not supported"),
        ("best_of", request.best_of not in (None, 1), "best_of is not supported"),
        ("suffix", request.suffix is not None, "suffix is not supported"),
        ("max_tokens", isinstance(request.max_tokens, int) and request.max_tokens < 1, "must be at least 1"),
    ):
        if bad:
            raise RequestError(f"{name}: {why}", param=name)
    return request


def _prompt(request: CompletionRequest, tokenizer: PromptTokenizer | None) -> tuple[str, list[int] | None]:
    """The prompt as text, and as token ids when the client sent ids."""
    prompt = request.prompt
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str):
        if not prompt:
            raise RequestError("prompt must not be empty", param="prompt")
        return prompt, None
    if isinstance(prompt, list) and prompt and all(type(t) is int for t in prompt):
        if tokenizer is None:
            raise RequestError("this model takes prompts as text only, not token ids", param="prompt")
        return tokenizer.decode(prompt), list(prompt)
    if isinstance(prompt, list) and len(prompt) > 1:
        raise RequestError("one prompt per request: batched prompts are not supported", param="prompt")
    raise RequestError("prompt must be a non-empty string or a list of token ids", param="prompt")


class _Totals:
    """What the stream carried, for usage and the non-streamed body."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.token_ids: list[int] = []
        self.ids_reported = True
        self.end: Finished | EngineFailed | None = None

    def add(self, chunk: Chunk) -> None:
        self.text.append(chunk.text)
        self.token_ids.extend(chunk.token_ids)
        if chunk.text and not chunk.token_ids:
            self.ids_reported = False

    async def usage(self, engine: Engine) -> dict[str, Any]:
        end = self.end
        prompt = end.prompt_tokens if end is not None else 0
        cached = end.cached_tokens if isinstance(end, Finished) else 0
        completion = end.output_tokens if isinstance(end, Finished) else None
        if completion is None:
            text = "".join(self.text)
            completion = (
                len(self.token_ids) if self.ids_reported or not text else await engine.count_tokens(text)
            )
        return {
            "prompt_tokens": prompt,
            "total_tokens": prompt + completion,
            "completion_tokens": completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }


def _error_of(failure: EngineFailed) -> tuple[int, dict[str, Any]]:
    status, kind = failure_status(failure.failure)
    message = failure.message if failure.failure in _SHOWN else failure.failure.replace("_", " ")
    param = "prompt" if failure.failure == "context_length_exceeded" else None
    return status, error_body(message, type=kind, param=param, code=failure.failure)


async def create_completion(ctx: Context, ex: Exchange) -> None:
    request = _request(await ex.read_body(ctx.max_body_bytes))
    ticket = await ctx.admit()
    try:
        await _complete(ctx, ex, request)
    finally:
        if ticket is not None:
            ticket.release()


async def _complete(ctx: Context, ex: Exchange, request: CompletionRequest) -> None:
    engine = ctx.service.engine
    tokenizer = engine.capabilities.tokenizer
    text, ids = _prompt(request, tokenizer)
    prompt_ids = ids
    if prompt_ids is None and request.return_token_ids and tokenizer is not None:
        prompt_ids = tokenizer.encode(text)
    stop = [request.stop] if isinstance(request.stop, str) else list(request.stop or ())
    completion_id = f"cmpl-{secrets.token_hex(16)}"
    generation = GenerationRequest(
        prompt=text,
        prompt_token_ids=tuple(ids) if ids is not None else None,
        max_tokens=16 if request.max_tokens is msgspec.UNSET else request.max_tokens,
        sampling=Sampling(
            temperature=request.temperature, top_p=request.top_p, top_k=request.top_k, seed=request.seed
        ),
        stop=tuple(stop),
        # The whole prompt is the request's last input (a scripted engine picks its rule by it).
        hints=RequestHints(last_input=text),
        request_id=completion_id,
    )
    head = {
        "id": completion_id,
        "object": "text_completion",
        "created": int(time.time()),
        "model": request.model or engine.model_name,
    }
    totals = _Totals()

    async def body() -> None:
        stream = engine.generate(generation)
        async with aclosing(stream):
            if request.stream:
                await _stream(ex, engine, stream, request, head, prompt_ids, totals)
            else:
                async for event in stream:
                    _take(event, totals)
                await _whole(ex, engine, request, head, prompt_ids, totals)

    # No response log here, so only the driver's watchers: a client gone or the shutdown deadline.
    stopped = await ctx.runner.watched(body, [client_gone(ex)])
    if stopped is Stop.SHUTDOWN and ex.started and not ex.disconnected:
        with anyio.CancelScope(shield=True):
            await ex.send_body(_DONE, more=False)
    cause = (
        "client_disconnected"
        if ex.disconnected
        else (totals.end.failure if isinstance(totals.end, EngineFailed) else "completed")
    )
    ctx.runner.metrics.request("completions", ex.status, cause)


def _take(event: GenerationOutput, totals: _Totals) -> None:
    if isinstance(event, Chunk):
        totals.add(event)
    else:
        totals.end = event


def _choice(text: str, finish: str | None, ids: list[int] | None) -> dict[str, Any]:
    choice: dict[str, Any] = {
        "index": 0,
        "text": text,
        "logprobs": None,
        "finish_reason": finish,
        "stop_reason": None,
    }
    if ids is not None:
        choice["token_ids"] = ids
    return choice


async def _whole(
    ex: Exchange,
    engine: Engine,
    request: CompletionRequest,
    head: dict[str, Any],
    ids: list[int] | None,
    totals: _Totals,
) -> None:
    end = totals.end
    if isinstance(end, EngineFailed) or end is None:
        await ex.json(*_error_of(end or EngineFailed(failure="internal_error", message="")))
        return
    choice = _choice("".join(totals.text), end.reason, totals.token_ids if request.return_token_ids else None)
    if request.return_token_ids:
        choice["prompt_token_ids"] = ids
    await ex.json(200, {**head, "choices": [choice], "usage": await totals.usage(engine)})


async def _stream(
    ex: Exchange,
    engine: Engine,
    stream: Any,
    request: CompletionRequest,
    head: dict[str, Any],
    ids: list[int] | None,
    totals: _Totals,
) -> None:
    async def send(payload: Any) -> None:
        await ex.send_body(b"data: " + _json.encode(payload) + b"\n\n")

    try:
        async for event in stream:
            await _relay(ex, engine, request, head, ids, totals, event, send)
    except Exception:
        if not ex.started:
            raise  # nothing sent yet: the app answers 500
        # The stream is open: end it the way a failure mid-stream always ends, never aborted.
        log.exception("completion failed", completion_id=head["id"])
        totals.end = EngineFailed(failure="internal_error", message="")
        await send(_error_of(totals.end)[1])
    if not ex.started:  # the engine ended without a last event: a bug below, reported as one
        await ex.json(*_error_of(EngineFailed(failure="internal_error", message="")))
    elif ex.status == 200:
        await ex.send_body(_DONE, more=False)


async def _relay(
    ex: Exchange,
    engine: Engine,
    request: CompletionRequest,
    head: dict[str, Any],
    ids: list[int] | None,
    totals: _Totals,
    event: GenerationOutput,
    send: Any,
) -> None:
    """Send one engine event; a failure before anything was sent is an HTTP error instead."""
    with_ids, first = request.return_token_ids, not ex.started
    _take(event, totals)
    if first and isinstance(event, EngineFailed):
        await ex.json(*_error_of(event))
        return
    if first:
        await ex.start_sse()
    match event:
        case Chunk():
            choice = _choice(event.text, None, list(event.token_ids) if with_ids else None)
            if first and with_ids:
                choice["prompt_token_ids"] = ids
            await send({**head, "choices": [choice], "usage": None})
        case Finished():
            await send(
                {**head, "choices": [_choice("", event.reason, [] if with_ids else None)], "usage": None}
            )
            if request.stream_options is not None and request.stream_options.include_usage:
                await send({**head, "choices": [], "usage": await totals.usage(engine)})
        case EngineFailed():
            await send(_error_of(event)[1])


def model_lister(engine: Engine) -> Callable[[], Awaitable[list[str]]]:
    """What ``/v1/models`` lists: the upstreams' models when the engine fronts some, else its own."""
    upstream_models = engine.capabilities.upstream_models
    if upstream_models is None:

        async def own() -> list[str]:
            return [engine.model_name]

        return own

    async def models() -> list[str]:
        try:
            names: list[str] = await upstream_models()
        except NoHealthyUpstream:
            raise RequestError(
                "no upstream is available", status=503, code="upstream_unavailable", type="server_error"
            ) from None
        return names

    return models
