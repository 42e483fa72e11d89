"""Disaggregated serving: the context phase on one pool, generation on another (SPEC E5).

The handoff is vLLM's, as its prefill/decode proxy speaks it (NIXL and similar KV
connectors):

1. **Context phase.** The completion goes to a prefill upstream with ``max_tokens: 1``,
   ``stream: false`` and ``kv_transfer_params: {"do_remote_decode": true, ...}``. The
   worker computes the prompt's KV cache, keeps it, and answers with its own
   ``kv_transfer_params`` saying where the blocks are.
2. **Generation phase.** The original, streamed completion goes to a decode upstream
   carrying those parameters; the decode worker pulls the blocks and generates.

What the client sees is decided above this module: the Responses pipeline sends
``response.created`` and ``response.in_progress`` before it asks the engine, and its
keepalive repeats ``response.in_progress`` while the context phase is silent (SPEC W8,
W9). A failed context phase is an ordinary engine failure, so after the stream opened it
ends with ``error`` + ``response.failed`` under the upstream's code
(``context_length_exceeded`` stays that code). The transfer parameters never leave this
module -- no engine event carries them -- so no client-visible byte can.

Usage: the decode worker receives the whole prompt as transferred KV and reports all of
it as cached, on a cold prompt as readily as on a warm one. Only the context phase
measured its real prefix-cache hits, so prompt and cached counts come from there.

When the context phase's single token already ends the generation (it was EOS), the
worker does not hand off (no parameters, finish reason ``stop``): that is the answer,
and no generation phase runs.

Routing: ``prompt_cache_key`` steers the context phase (the prefix cache lives on the
prefill workers); the generation phase goes to the least-loaded decode upstream.
Retries: the context phase follows the usual rule. The generation phase is retried only
when its connection was refused: a decode worker that received the request may already
have pulled the blocks, which the prefill worker releases after one transfer.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from functools import partial
from typing import Any

import msgspec

from accord.engine.protocol import GenerationRequest
from accord.engine.remote import UpstreamEngine
from accord.engine.upstream import (
    DEFAULT_RETRY,
    RetryPolicy,
    UpstreamPool,
    WholeCompletion,
    post_completion,
    stream_completion,
)
from accord.events.generation import Chunk, EngineFailed, Finished, GenerationOutput

#: What a prefill request carries: "decode elsewhere; tell me where your blocks are".
_REMOTE_DECODE: dict[str, Any] = {
    "do_remote_decode": True,
    "do_remote_prefill": False,
    "remote_engine_id": None,
    "remote_block_ids": None,
    "remote_host": None,
    "remote_port": None,
}


class DisaggEngine(UpstreamEngine):
    def __init__(
        self,
        prefill_urls: list[str],
        decode_urls: list[str],
        *,
        retry: RetryPolicy = DEFAULT_RETRY,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.prefill = UpstreamPool(prefill_urls, self.http)
        self.decode = UpstreamPool(decode_urls, self.http)
        self.retry = retry
        self.decode_retry = RetryPolicy(attempts=retry.attempts, after_delivery=False)

    def pools(self) -> list[UpstreamPool]:
        return [self.prefill, self.decode]

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[GenerationOutput, None]:
        prompt, prompt_tokens = await self.prompt_of(request)
        if (rejected := self.over_length(prompt_tokens)) is not None:
            yield rejected
            return
        body = self.body(request, prompt)
        context = {k: v for k, v in body.items() if k != "stream_options"}
        context.update(stream=False, max_tokens=1, kv_transfer_params=_REMOTE_DECODE)
        outcome = await post_completion(
            self.prefill,
            context,
            key=request.cache_key,
            request_id=request.request_id,
            policy=self.retry,
            extra=partial(self.per_upstream, prompt_tokens),
        )
        if isinstance(outcome, EngineFailed):
            yield msgspec.structs.replace(outcome, prompt_tokens=prompt_tokens or 0)
            return
        handoff = _Handoff.of(outcome, prompt_tokens)
        if handoff.finished is not None:
            for event in handoff.finished:
                yield event
            return
        generation = dict(body)
        if handoff.params:
            generation["kv_transfer_params"] = handoff.params
        events = stream_completion(
            self.decode,
            generation,
            key=None,
            request_id=request.request_id,
            reader=self.reader(
                request, handoff.prompt_tokens, cached_tokens=handoff.cached_tokens, trust_cached=False
            ),
            policy=self.decode_retry,
            extra=partial(self.per_upstream, prompt_tokens),
        )
        async with aclosing(events):
            async for event in events:
                yield event


class _Handoff(msgspec.Struct, frozen=True, kw_only=True):
    """What the context phase answered, as far as the generation phase needs it."""

    params: dict[str, Any] | None
    prompt_tokens: int | None
    cached_tokens: int | None
    #: Set when the context phase's one token already finished the generation.
    finished: list[GenerationOutput] | None = None

    @classmethod
    def of(cls, outcome: WholeCompletion, local_prompt_tokens: int | None) -> _Handoff:
        body = outcome.body
        usage = body.usage
        prompt_tokens = (
            usage.prompt_tokens
            if usage is not None and usage.prompt_tokens is not None
            else local_prompt_tokens
        )
        cached = body.cached_tokens()
        choice = body.choices[0] if body.choices else None
        finished: list[GenerationOutput] | None = None
        if (
            not body.kv_transfer_params
            and choice is not None
            and choice.finish_reason not in (None, "length")
        ):
            finished = []
            if choice.text:
                finished.append(Chunk(text=choice.text, token_ids=tuple(choice.token_ids or ())))
            finished.append(
                Finished(
                    reason="stop",
                    prompt_tokens=prompt_tokens or 0,
                    cached_tokens=cached or 0,
                    output_tokens=usage.completion_tokens if usage is not None else None,
                )
            )
        return cls(
            params=body.kv_transfer_params,
            prompt_tokens=prompt_tokens,
            cached_tokens=cached,
            finished=finished,
        )
