"""A protocol-faithful stand-in for a vLLM server's completions API (test fixture).

It reproduces the documented shapes of ``POST /v1/completions`` -- streamed chunks with
``token_ids`` and ``prompt_token_ids`` (``return_token_ids``), the usage chunk with
``prompt_tokens_details.cached_tokens`` (``stream_options.include_usage``), ``[DONE]``,
the non-streamed body, errors as ``{"error": {...}}`` with numeric codes, the over-length
400s of current vLLM, the default ``max_tokens`` of 16 -- and the prefill/decode handoff
of its KV connectors (``kv_transfer_params``). Delays, failures and cuts are set per
test through :class:`Behaviour`; every request is recorded in :class:`Seen`, including
whether its client went away before the end.

Tokens are :mod:`accord.engine.tokens` pieces of the reply (words, spaces, punctuation).
A prompt given as text is measured the same way; as ids, by its length. The prefix cache
is simulated: a prompt's cached tokens are its longest common prefix with an earlier
prompt on this server, in whole blocks, never the last token.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from accord.engine import tokens
from accord.engine.scripted import stop_cut

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: An internal address a prefill worker names in its handoff; must never reach a client.
INTERNAL_HOST = "10.77.0.42"


@dataclass
class Behaviour:
    reply: str = "Hello from the upstream, how are you?"
    #: Before the first token (queueing + prefill); a decode with transferred KV skips it.
    first_token_delay: float = 0.0
    token_delay: float = 0.0
    #: HTTP statuses to answer the next requests with, one per request.
    fail_next: list[int] = field(default_factory=list)
    #: Cut the connection (no end of chunked body) after this many tokens.
    drop_after: int | None = None
    #: Send a vLLM error event (then [DONE]) after this many tokens.
    error_after: int | None = None
    block_size: int = 4
    max_model_len: int = 4096
    healthy: bool = True
    #: Prefill only: the single token is EOS, so no handoff (finish "stop", no parameters).
    prefill_finishes: bool = False
    #: ``Retry-After`` sent with the ``fail_next`` answers.
    retry_after: str | None = None
    #: Like ``vllm serve --api-key``: every /v1 route wants this bearer token.
    api_key: str | None = None


@dataclass
class Seen:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    started_at: float
    ended_at: float | None = None
    completed: bool = False
    disconnected: bool = False
    tokens_sent: int = 0
    #: The client's (host, port): one per connection.
    peer: tuple[str, int] | None = None


class TransferRegistry:
    """KV blocks a prefill worker holds for a decode worker to pull, once."""

    def __init__(self) -> None:
        self.held: dict[tuple[str, tuple[int, ...]], tuple[Any, int]] = {}
        self.pulled: list[dict[str, Any]] = []
        self._ids = itertools.count(1000)

    def hold(self, engine_id: str, prompt: Any, prompt_len: int) -> list[int]:
        blocks = [next(self._ids) for _ in range(max(1, prompt_len // 4))]
        self.held[(engine_id, tuple(blocks))] = (prompt, prompt_len)
        return blocks

    def pull(self, params: dict[str, Any], prompt: Any) -> bool:
        key = (str(params.get("remote_engine_id")), tuple(params.get("remote_block_ids") or ()))
        held = self.held.pop(key, None)
        ok = held is not None and held[0] == prompt
        self.pulled.append({"params": params, "ok": ok})
        return ok


def _now_ms() -> int:
    return int(time.time())


class FakeVLLM:
    def __init__(
        self,
        name: str = "up",
        *,
        model: str = "fake-model",
        role: Literal["both", "prefill", "decode"] = "both",
        registry: TransferRegistry | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.role = role
        self.registry = registry or TransferRegistry()
        self.behaviour = Behaviour()
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.probes = 0
        self.unauthorised = 0
        self._prompts: list[tuple[Any, ...]] = []
        self._ids = itertools.count(1)

    # -- ASGI ---------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        if self.behaviour.api_key is not None and path.startswith("/v1/"):
            sent = dict(scope.get("headers", [])).get(b"authorization", b"").decode()
            if sent != f"Bearer {self.behaviour.api_key}":
                self.unauthorised += 1
                await _json(send, 401, {"error": "Unauthorized"})
                return
        if path in ("/v1/models", "/health") and method == "GET":
            self.probes += 1
            if not self.behaviour.healthy:
                await _json(
                    send, 503, {"error": {"message": "unhealthy", "type": "ServiceUnavailable", "code": 503}}
                )
            elif path == "/health":
                await _json(send, 200, {})
            else:
                card = {
                    "id": self.model,
                    "object": "model",
                    "created": _now_ms(),
                    "owned_by": "vllm",
                    "root": self.model,
                    "parent": None,
                    "max_model_len": self.behaviour.max_model_len,
                }
                await _json(send, 200, {"object": "list", "data": [card]})
            return
        if path == "/v1/completions" and method == "POST":
            await self._completions(scope, receive, send)
            return
        if path == "/tokenize" and method == "POST":
            body = json.loads((await receive()).get("body", b"") or b"{}")
            ids = list(tokens.token_ids(str(body.get("prompt", ""))))
            await _json(
                send, 200, {"count": len(ids), "max_model_len": self.behaviour.max_model_len, "tokens": ids}
            )
            return
        await _json(send, 404, {"error": {"message": "not found", "type": "NotFoundError", "code": 404}})

    async def _completions(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        peer = scope.get("client")
        seen = Seen(path=scope["path"], body=json.loads(raw), headers=headers, started_at=time.monotonic())
        seen.peer = (str(peer[0]), int(peer[1])) if peer else None
        self.seen.append(seen)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    if not seen.completed:
                        seen.disconnected = True
                        tg.cancel_scope.cancel()

                tg.start_soon(watch)
                await self._answer(seen, send)
                seen.completed = True
                tg.cancel_scope.cancel()
        finally:
            self.in_flight -= 1
            seen.ended_at = time.monotonic()

    # -- the completion ---------------------------------------------------------------------------

    async def _answer(self, seen: Seen, send: Send) -> None:
        b, body = self.behaviour, seen.body
        if b.fail_next:
            status = b.fail_next.pop(0)
            extra = [(b"retry-after", b.retry_after.encode())] if b.retry_after is not None else []
            await _json(send, status, _error(f"fake failure {status}", status), extra)
            return
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
            prompt = prompt[0]
        key = tuple(prompt) if isinstance(prompt, list) else tuple(tokens.token_ids(str(prompt)))
        prompt_len = len(key)
        max_tokens = body.get("max_tokens", 16)  # vLLM's completions default
        if prompt_len >= b.max_model_len:
            message = (
                f"The decoder prompt (length {prompt_len}) is longer than the maximum model length of "
                f"{b.max_model_len}. Make sure that `max_model_len` is no smaller than the number of text tokens."
            )
            await _json(send, 400, _error(message, 400))
            return
        if max_tokens is not None and prompt_len + max_tokens > b.max_model_len:
            message = (
                f"'max_tokens' or 'max_completion_tokens' is too large: {max_tokens}. This model's maximum "
                f"context length is {b.max_model_len} tokens and your request has {prompt_len} input tokens "
                f"({max_tokens} > {b.max_model_len} - {prompt_len})."
            )
            await _json(send, 400, _error(message, 400))
            return
        kv = body.get("kv_transfer_params") or {}
        cached = self._cached(key)
        transferred = False
        if self.role == "decode" and kv.get("do_remote_prefill"):
            transferred = self.registry.pull(kv, prompt)
            # The whole prompt arrives as KV: vLLM counts all of it as cached.
            cached = prompt_len if transferred else cached
        self._prompts.append(key)
        pieces = tokens.pieces(b.reply)
        if self.role == "prefill" and kv.get("do_remote_decode"):
            await anyio.sleep(b.first_token_delay)
            await self._prefill_answer(send, prompt, prompt_len, cached, pieces)
            return
        if not transferred:
            await anyio.sleep(b.first_token_delay)
        finish = "stop"
        # vLLM's stop strings: the text ends before the first one (not included), named as stop_reason.
        stops = body.get("stop") or ()
        pieces, stop_reason = stop_cut(pieces, (stops,) if isinstance(stops, str) else tuple(stops))
        if max_tokens is not None and len(pieces) > max_tokens:
            pieces, finish, stop_reason = pieces[:max_tokens], "length", None
        usage = _usage(prompt_len, len(pieces), cached)
        want_ids = bool(body.get("return_token_ids"))
        base = {
            "id": f"cmpl-{self.name}-{next(self._ids)}",
            "object": "text_completion",
            "created": _now_ms(),
        }
        base["model"] = body.get("model") or self.model
        if not body.get("stream"):
            choice: dict[str, Any] = {
                "index": 0,
                "text": "".join(pieces),
                "logprobs": None,
                "finish_reason": finish,
                "stop_reason": stop_reason,
                "prompt_logprobs": None,
            }
            if want_ids:
                choice["token_ids"] = [tokens.token_ids(p)[0] for p in pieces]
                choice["prompt_token_ids"] = list(key)
            await _json(send, 200, {**base, "choices": [choice], "usage": usage, "kv_transfer_params": None})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for n, piece in enumerate(pieces):
            if b.drop_after is not None and n == b.drop_after:
                raise ConnectionAbortedError("fake upstream cut the stream")
            if b.error_after is not None and n == b.error_after:
                await _sse(
                    send,
                    {"error": {"message": "fake engine died", "type": "InternalServerError", "code": 500}},
                )
                await _sse_raw(send, b"[DONE]", more=False)
                return
            if n and b.token_delay:
                await anyio.sleep(b.token_delay)
            choice = {
                "index": 0,
                "text": piece,
                "logprobs": None,
                "finish_reason": finish if n == len(pieces) - 1 else None,
                "stop_reason": stop_reason if n == len(pieces) - 1 else None,
            }
            if want_ids:
                choice["token_ids"] = list(tokens.token_ids(piece))
                if n == 0:
                    choice["prompt_token_ids"] = list(key)
            await _sse(send, {**base, "choices": [choice], "usage": None})
            seen.tokens_sent += 1
        if not pieces:
            await _sse(
                send,
                {
                    **base,
                    "choices": [
                        {"index": 0, "text": "", "finish_reason": finish, "stop_reason": stop_reason}
                    ],
                    "usage": None,
                },
            )
        if (body.get("stream_options") or {}).get("include_usage"):
            await _sse(send, {**base, "choices": [], "usage": usage})
        await _sse_raw(send, b"[DONE]", more=False)

    async def _prefill_answer(
        self, send: Send, prompt: Any, prompt_len: int, cached: int, pieces: list[str]
    ) -> None:
        first = pieces[:1]
        params: dict[str, Any] | None = None
        finish = "stop"
        if not self.behaviour.prefill_finishes:
            finish = "length"
            params = {
                "do_remote_prefill": True,
                "do_remote_decode": False,
                "remote_engine_id": f"engine-{self.name}",
                "remote_block_ids": self.registry.hold(f"engine-{self.name}", prompt, prompt_len),
                "remote_host": INTERNAL_HOST,
                "remote_port": 5600,
                "tp_size": 1,
            }
        choice = {
            "index": 0,
            "text": "".join(first),
            "logprobs": None,
            "finish_reason": finish,
            "stop_reason": None,
        }
        body = {
            "id": f"cmpl-{self.name}-{next(self._ids)}",
            "object": "text_completion",
            "created": _now_ms(),
            "model": self.model,
            "choices": [choice],
            "usage": _usage(prompt_len, len(first), cached),
            "kv_transfer_params": params,
        }
        await _json(send, 200, body)

    def _cached(self, key: tuple[Any, ...]) -> int:
        best = 0
        for earlier in self._prompts:
            n = 0
            for a, b in zip(earlier, key, strict=False):
                if a != b:
                    break
                n += 1
            best = max(best, n)
        size = self.behaviour.block_size
        return min(best, len(key) - 1) // size * size if key else 0


def _usage(prompt: int, completion: int, cached: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "completion_tokens": completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _error(message: str, status: int) -> dict[str, Any]:
    kind = "BadRequestError" if status < 500 else "InternalServerError"
    return {"error": {"message": message, "type": kind, "param": None, "code": status}}


async def _json(send: Send, status: int, payload: Any, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _sse(send: Send, payload: Any) -> None:
    await _sse_raw(send, json.dumps(payload).encode())


async def _sse_raw(send: Send, data: bytes, *, more: bool = True) -> None:
    await send({"type": "http.response.body", "body": b"data: " + data + b"\n\n", "more_body": more})


def main() -> None:
    """``python -m tests.remote.fake_vllm --port N [--tokens N --token-delay S ...]`` (benchmarks)."""
    import argparse

    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--first-token-delay", type=float, default=0.0)
    parser.add_argument("--token-delay", type=float, default=0.0)
    args = parser.parse_args()
    app = FakeVLLM("bench")
    # N/2 words, N/2 - 1 spaces and a full stop: N tokens for an even N.
    app.behaviour.reply = " ".join(f"w{n}" for n in range(args.tokens // 2)) + "."
    app.behaviour.first_token_delay = args.first_token_delay
    app.behaviour.token_delay = args.token_delay
    config = Config()
    config.bind = [f"127.0.0.1:{args.port}"]
    config.accesslog = None
    config.errorlog = None

    async def run() -> None:
        await serve(app, config)  # type: ignore[arg-type]  # hypercorn types its ASGI callable narrowly

    anyio.run(run)


if __name__ == "__main__":
    main()
