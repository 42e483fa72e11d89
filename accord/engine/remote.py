"""Remote engines: OpenAI-compatible completion servers as accord's token source (SPEC E4).

vLLM, SGLang, TensorRT-LLM and llama.cpp servers do the generating; accord keeps every
Responses semantic (rendering, parsing, items, events, usage). The prompt is rendered
here from the model's own template and, when the model's tokenizer can be rebuilt from
``--model``, sent as token ids: the upstream then runs exactly the tokens the template
produced, and accord knows the prompt's size before the upstream answers. The output
comes back as raw text through ``/v1/completions`` -- never chat completions, whose
server-side template and parsers would make a second, different interpretation.

``--upstream URL`` may be repeated: see :mod:`accord.engine.upstream._pool` for health,
least-loaded routing and ``prompt_cache_key`` affinity, and
:mod:`accord.engine.upstream._calls` for what is retried. With ``--prefill-upstream``
and ``--decode-upstream`` pools the engine is :class:`accord.engine.disagg.DisaggEngine`.
Which of the two a server runs is decided by the composition root (``accord.adapters.build``);
nothing under ``engine/`` reads configuration.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
import structlog

from accord.engine import tokens
from accord.engine.protocol import EngineCapabilities, GenerationRequest, split_stops
from accord.engine.upstream import (
    DEFAULT_RETRY,
    HttpSession,
    ModelFiles,
    NoHealthyUpstream,
    RetryPolicy,
    SamplingDefaults,
    StreamReader,
    TextTokenizer,
    Upstream,
    UpstreamPool,
    stream_completion,
    upstream_token_count,
)
from accord.events.generation import EngineFailed, GenerationOutput

log = structlog.get_logger("accord.engine.remote")

#: Prompts longer than this many characters are tokenised off the event loop.
_TOKENISE_INLINE_CHARS = 16_384


class UpstreamEngine:
    """What every upstream-backed engine shares: the prompt side and the request body."""

    def __init__(
        self,
        *,
        files: ModelFiles | None = None,
        model_name: str | None = None,
        served_names: Sequence[str] = (),
        sampling: SamplingDefaults | None = None,
        max_context: int | None = None,
        http: HttpSession | None = None,
    ) -> None:
        self.http = http or HttpSession()
        self.tokenizer: TextTokenizer | None = files.tokenizer if files else None
        # Read by the service builder to render prompts with the model's own template.
        self.chat_template: str | None = files.chat_template if files else None
        self.bos_token = files.bos_token if files else ""
        self.eos_token = files.eos_token if files else ""
        #: The name to send upstream; None: the id each upstream reports serving.
        self.served_model = model_name
        #: The names clients see (``--served-model-name``); empty: the upstream's own.
        self.served_names = tuple(dict.fromkeys(served_names))
        #: The model's own defaults (generation config), used where a request sets none.
        self.sampling = sampling or SamplingDefaults()
        self.max_context = max_context

    def pools(self) -> list[UpstreamPool]:
        raise NotImplementedError

    @property
    def capabilities(self) -> EngineCapabilities:
        # A JSON schema goes upstream as ``response_format``; tool calls are not constrained there,
        # since the upstream does not know the model profile's tool-call syntax.
        return EngineCapabilities(
            json_schema=True,
            tokenizer=self.tokenizer,
            chat_template=self.chat_template,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
            upstream_models=self.upstream_models,
            readiness=self.readiness,
            statistics=self.statistics,
        )

    @property
    def model_name(self) -> str:
        if self.served_names:
            return self.served_names[0]
        if self.served_model:
            return self.served_model
        known = [m for pool in self.pools() for u in pool.upstreams for m in u.models]
        return known[0] if known else "remote"

    async def count_tokens(self, prompt: str) -> int:
        """Exact with the model's tokenizer, else by the upstream's ``/tokenize``, else estimated."""
        if self.tokenizer is not None:
            return len(await self.encode(prompt))
        counted = await upstream_token_count(self.pools()[0], prompt, self.served_model)
        return tokens.count(prompt) if counted is None else counted

    async def encode(self, text: str) -> list[int]:
        assert self.tokenizer is not None
        if len(text) <= _TOKENISE_INLINE_CHARS:
            return self.tokenizer.encode(text)
        return await anyio.to_thread.run_sync(self.tokenizer.encode, text)

    def count_text(self, text: str) -> int:
        return self.tokenizer.count(text) if self.tokenizer is not None else tokens.count(text)

    async def prompt_of(self, request: GenerationRequest) -> tuple[str | list[int], int | None]:
        """The prompt as sent upstream (token ids when we have them) and its size when known."""
        if request.prompt_token_ids is not None:
            return list(request.prompt_token_ids), len(request.prompt_token_ids)
        if self.tokenizer is not None:
            ids = await self.encode(request.prompt)
            return ids, len(ids)
        return request.prompt, None

    def over_length(self, prompt_tokens: int | None) -> EngineFailed | None:
        if self.max_context is None or prompt_tokens is None or prompt_tokens <= self.max_context:
            return None
        return EngineFailed(
            failure="context_length_exceeded",
            message=(
                f"This model's maximum context length is {self.max_context} tokens. However, your "
                f"prompt is {prompt_tokens} tokens. Please reduce the length of the messages."
            ),
            prompt_tokens=prompt_tokens,
        )

    def body(self, request: GenerationRequest, prompt: str | list[int]) -> dict[str, Any]:
        """The ``/v1/completions`` body, less what depends on the upstream (see ``per_upstream``)."""
        body: dict[str, Any] = {
            "prompt": prompt,
            "stream": True,
            "stream_options": {"include_usage": True},
            # vLLM extensions, ignored by servers that lack them: token ids per chunk, and the
            # raw text with its special tokens (the parsers need tool and channel markup), with
            # no space put between a special token and its neighbours (vLLM's detokenizer does
            # unless both flags are off: "<|open|> tools <|sep|>" is not Kimi K3's markup).
            "return_token_ids": True,
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
        }
        if isinstance(prompt, str):
            # The rendered template spells out BOS itself; a server must not add another.
            body["add_special_tokens"] = False
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        sampling = request.sampling
        defaults = self.sampling.given()
        for name in ("temperature", "top_p", "top_k", "seed"):
            value = getattr(sampling, name)
            if value is None:
                value = defaults.get(name)
            if value is not None:
                body[name] = value
        text_stops, token_stops = self.stops(request)
        if text_stops:
            body["stop"] = list(text_stops)
        if token_stops:
            # vLLM and SGLang stop on these ids (and do not print them); a quoted ``<|call|>``
            # inside a value is ordinary tokens there, and so is data.
            body["stop_token_ids"] = sorted(token_stops)
        constraint = request.constraint
        if constraint is not None and constraint.json_schema is not None:
            # The OpenAI form, which vLLM, SGLang and llama-server take on /v1/completions too.
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": constraint.name, "schema": json.loads(constraint.json_schema)},
            }
        return body

    def stops(self, request: GenerationRequest) -> tuple[tuple[str, ...], dict[int, str]]:
        """The request's stops as text, and as special-token ids where the model's tokenizer is known."""
        if self.tokenizer is None:
            return request.stop, {}
        return split_stops(request.stop, self.tokenizer.special_id)

    def reader(
        self, request: GenerationRequest, prompt_tokens: int | None, **extra: Any
    ) -> partial[StreamReader]:
        """How each attempt of ``request`` reads its stream: the stops it sent, by text and by id."""
        return partial(
            StreamReader,
            count=self.count_text,
            prompt_tokens=prompt_tokens,
            stops=request.stop,
            stop_tokens=self.stops(request)[1],
            **extra,
        )

    def per_upstream(self, prompt_tokens: int | None, upstream: Upstream) -> dict[str, Any]:
        """Model id and default budget for one upstream (the body's own fields take precedence)."""
        extra: dict[str, Any] = {}
        model = self.served_model or (upstream.models[0] if upstream.models else None)
        if model:
            extra["model"] = model
        if upstream.max_model_len is not None and prompt_tokens is not None:
            extra["max_tokens"] = max(1, upstream.max_model_len - prompt_tokens)
        else:
            # vLLM reads an explicit null as "up to the context length" (its default is 16).
            extra["max_tokens"] = None
        return extra

    async def upstream_models(self) -> list[str]:
        """What ``/v1/models`` lists: the served names, else the ids the upstreams serve now.

        Either way the upstreams are asked, so the listing fails (NoHealthyUpstream) when
        none of them could answer a request.
        """
        ids = await self.pools()[0].list_models()
        return list(self.served_names) or ids

    async def readiness(self) -> dict[str, Any]:
        """Ready when every pool has a healthy upstream, asking each upstream now (``/ready``)."""
        ready = True
        for pool in self.pools():
            try:
                await pool.list_models()
            except NoHealthyUpstream:
                ready = False
        return {"ready": ready, "upstreams": [u for pool in self.pools() for u in pool.statistics()]}

    def statistics(self) -> dict[str, Any]:
        return {"pools": [pool.statistics() for pool in self.pools()]}

    async def aclose(self) -> None:
        await self.http.aclose()


class RemoteEngine(UpstreamEngine):
    """One pool of interchangeable upstreams."""

    def __init__(self, urls: list[str], *, retry: RetryPolicy = DEFAULT_RETRY, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pool = UpstreamPool(urls, self.http)
        self.retry = retry

    def pools(self) -> list[UpstreamPool]:
        return [self.pool]

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[GenerationOutput, None]:
        prompt, prompt_tokens = await self.prompt_of(request)
        if (rejected := self.over_length(prompt_tokens)) is not None:
            yield rejected
            return
        events = stream_completion(
            self.pool,
            self.body(request, prompt),
            key=request.cache_key,
            request_id=request.request_id,
            reader=self.reader(request, prompt_tokens),
            policy=self.retry,
            extra=partial(self.per_upstream, prompt_tokens),
        )
        async with aclosing(events):
            async for event in events:
                yield event
