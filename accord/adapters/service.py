"""The service: what turns one decoded request into a ready-to-run response.

It owns the long-lived parts (engine, prompt renderer, profile and parsers, sealer,
store) and assembles a :class:`ResponseRun` per request. The HTTP edge and the replay
tools both use it, so a replayed trace runs exactly the chain a live request runs.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from accord.adapters.requests import (
    Conversation,
    NormalizeOptions,
    ResponsesRequest,
    Sealer,
    normalize,
    referenced_ids,
    response_echo,
)
from accord.adapters.templates import Profile, PromptRenderer
from accord.engine.protocol import Engine, GenerationRequest, RequestHints, Sampling
from accord.errors import RequestError
from accord.events.response import Opened
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import ParseStage
from accord.pipeline.reasoning import ReasoningFactory
from accord.pipeline.run import ResponseRun, RunObserver
from accord.pipeline.tools import NoTools, ToolParserFactory

log = structlog.get_logger("accord.service")


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(16)}"


@dataclass
class Prepared:
    request: ResponsesRequest
    conversation: Conversation
    run: ResponseRun
    history: Sequence[dict[str, Any]] = ()


@dataclass
class Service:
    engine: Engine
    renderer: PromptRenderer
    profile: Profile
    reasoning: ReasoningFactory
    tools: ToolParserFactory
    sealer: Sealer | None = None
    keepalive_interval: float = 10.0
    web_search: str = "refuse"
    vision: bool = False
    observers: Callable[[], list[RunObserver]] = list
    new_id: Callable[[str], str] = new_id
    _warned: set[str] = field(default_factory=set)

    def warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message)

    async def history(self, request: ResponsesRequest) -> Sequence[dict[str, Any]]:
        """Items of the conversation ``previous_response_id`` points at (none without a store)."""
        if request.previous_response_id:
            raise RequestError(
                "previous_response_id needs a response store; this server runs without one",
                param="previous_response_id",
            )
        return ()

    async def references(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Stored items an ``item_reference`` names (none without a store)."""
        return {}

    async def prepare(self, request: ResponsesRequest) -> Prepared:
        history = await self.history(request)
        options = NormalizeOptions(
            web_search=self.web_search,  # type: ignore[arg-type]
            vision=self.vision,
            sealer=self.sealer,
            references=await self.references(referenced_ids(request)),
        )
        conversation = normalize(request, history=history, options=options)
        return Prepared(
            request=request,
            conversation=conversation,
            run=self.build_run(request, conversation),
            history=history,
        )

    def build_run(self, request: ResponsesRequest, conversation: Conversation) -> ResponseRun:
        prompt = self.renderer.render(conversation)
        if conversation.tool_choice not in ("auto", "none"):
            self.warn_once(
                "tool_choice",
                "tool_choice 'required' or a named tool is accepted but not enforced by this engine",
            )
        generation = GenerationRequest(
            prompt=prompt,
            max_tokens=conversation.max_output_tokens,
            sampling=Sampling(temperature=conversation.temperature, top_p=conversation.top_p),
            stop=tuple(self.profile.stop),
            cache_key=conversation.prompt_cache_key,
            required_tool=(
                conversation.tool_choice if conversation.tool_choice not in ("auto", "none") else None
            ),
            hints=RequestHints(
                last_input=conversation.last_input,
                last_item_type=conversation.last_item_type,
                tool_names=tuple(t.name for t in conversation.tools),
            ),
        )
        response_id = self.new_id("resp")
        generation = _with_id(generation, response_id)
        opened = Opened(
            response_id=response_id,
            created_at=int(time.time()),
            model=request.model or self.engine.model_name,
            echo=response_echo(request),
        )
        tool_parser = (
            NoTools()
            if conversation.tool_choice == "none" or not conversation.tools
            else self.tools(conversation.tools)
        )
        seal = (
            self.sealer.seal
            if (self.sealer is not None and conversation.include_encrypted_reasoning)
            else None
        )
        tracker = ItemTracker(
            new_id=self.new_id,
            now=lambda: int(time.time()),
            tools=conversation.tools,
            parallel_tool_calls=conversation.parallel_tool_calls,
            seal=seal,
        )
        return ResponseRun(
            engine=self.engine,
            request=generation,
            opened=opened,
            parse=ParseStage(self.reasoning(conversation.thinking), tool_parser),
            tracker=tracker,
            keepalive_interval=self.keepalive_interval,
            observers=self.observers(),
        )


def _with_id(request: GenerationRequest, response_id: str) -> GenerationRequest:
    import msgspec

    return msgspec.structs.replace(request, request_id=response_id)
