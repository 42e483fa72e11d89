"""The service: what turns one decoded request into a ready-to-run response.

It owns the long-lived parts (engine, prompt renderer, profile and parsers, sealer,
store), all given to its constructor by the composition root, and assembles a
:class:`ResponseRun` per request. The HTTP edge and the replay
tools both use it, so a replayed trace runs exactly the chain a live request runs.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.to_thread
import structlog

from accord.adapters.requests import (
    Conversation,
    NormalizeOptions,
    ResponsesRequest,
    Sealer,
    conversation_ref,
    normalize,
    referenced_ids,
    response_echo,
)
from accord.adapters.store import ChainBroken, ResponseStore
from accord.adapters.templates import Profile, PromptRenderer
from accord.engine.protocol import (
    Engine,
    GenerationRequest,
    OutputConstraint,
    RequestHints,
    Sampling,
    ToolSchema,
)
from accord.errors import NotFound, RequestError
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
    #: The wire protocol the request came in on. For ``chat_completions`` and ``messages`` the
    #: request is a stand-in (model and streaming only) and the conversation is the whole input.
    protocol: str = "responses"


#: The protocols a run can come in on besides Responses, and the prefix of their ids.
ID_PREFIXES = {"chat_completions": "chatcmpl", "messages": "msg"}


@dataclass
class Service:
    engine: Engine
    renderer: PromptRenderer
    profile: Profile
    reasoning: ReasoningFactory
    tools: ToolParserFactory
    sealer: Sealer | None = None
    keepalive_interval: float = 10.0
    web_search: Literal["refuse", "drop"] = "refuse"
    vision: bool = False
    observers: Callable[[], list[RunObserver]] = list
    new_id: Callable[[str], str] = new_id
    #: Stored responses (``previous_response_id``, ``item_reference``); None: nothing is stored.
    store: ResponseStore | None = None
    _warned: set[str] = field(default_factory=set)

    def warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message)

    async def history(self, request: ResponsesRequest) -> Sequence[dict[str, Any]]:
        """Items of the conversation ``previous_response_id`` points at (SPEC S1).

        That response's own history, input items and output items, oldest first; its
        ``instructions`` are not carried over. The request's ``store`` does not matter here:
        a ``store: false`` follow-up still reads the prior context.
        """
        previous = request.previous_response_id
        conversation_id = conversation_ref(request.conversation)
        if conversation_id is not None and previous:
            raise RequestError(
                "'previous_response_id' cannot be combined with 'conversation'.", param="previous_response_id"
            )
        if conversation_id is not None:
            return await self.conversation_history(conversation_id)
        if not previous:
            return ()
        if self.store is None:
            raise RequestError(
                "previous_response_id needs a response store; this server runs without one",
                param="previous_response_id",
            )
        try:
            found = await self.store.history(previous)
        except ChainBroken as exc:
            raise RequestError(
                f"Previous response '{previous}' continues from '{exc.missing_id}', which is no longer stored.",
                param="previous_response_id",
                status=404,
                code="previous_response_not_found",
            ) from None
        if found is None:
            raise RequestError(
                f"Previous response with id '{previous}' not found.",
                param="previous_response_id",
                status=404,
                code="previous_response_not_found",
            )
        if found.status in ("queued", "in_progress"):
            raise RequestError(
                f"Previous response '{previous}' is still in progress; continue from it once it has finished.",
                param="previous_response_id",
            )
        return found.items

    async def conversation_history(self, conversation_id: str) -> list[dict[str, Any]]:
        """The items of the conversation a request names, oldest first (a 404 if there is none)."""
        if self.store is None:
            raise RequestError(
                "conversation needs a response store; this server runs without one", param="conversation"
            )
        items = await self.store.conversation_context(conversation_id)
        if items is None:
            raise NotFound(f"Conversation with id '{conversation_id}' not found.", param="conversation")
        return items

    async def references(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Stored items an ``item_reference`` names (none without a store)."""
        if self.store is None or not ids:
            return {}
        return await self.store.items(ids)

    async def conversation(self, request: ResponsesRequest) -> tuple[Conversation, Sequence[dict[str, Any]]]:
        """The request normalised, with the history it continues (what ``prepare`` renders)."""
        history = await self.history(request)
        options = NormalizeOptions(
            web_search=self.web_search,
            vision=self.vision,
            sealer=self.sealer,
            references=await self.references(referenced_ids(request)),
        )
        return normalize(request, history=history, options=options), history

    async def prepare(self, request: ResponsesRequest) -> Prepared:
        conversation, history = await self.conversation(request)
        # Rendering is Python work that grows with the conversation: in a thread, the event loop
        # keeps its turns while a long history renders.
        run = await anyio.to_thread.run_sync(self.build_run, request, conversation)
        return Prepared(request=request, conversation=conversation, run=run, history=history)

    def warn_unenforced(self, conversation: Conversation, constraint: OutputConstraint | None) -> None:
        """Say once where a request asks for a constraint this engine (or tool format) cannot apply."""
        capabilities = self.engine.capabilities
        if conversation.tool_choice not in ("auto", "none") and not (
            constraint is not None and constraint.tools and capabilities.tool_calls
        ):
            self.warn_once(
                "tool_choice",
                "tool_choice 'required' or a named tool is accepted but not enforced by this engine",
            )
        if constraint is not None and constraint.json_schema is not None and not capabilities.json_schema:
            self.warn_once(
                "text.format", "text.format json_schema is accepted but not enforced by this engine"
            )

    def build_run(self, request: ResponsesRequest, conversation: Conversation) -> ResponseRun:
        return self.protocol_run(
            conversation,
            model=request.model or self.engine.model_name,
            echo=_echo(request),
            prefix="resp",
            reasoning_summary=request.reasoning is not None
            and (request.reasoning.summary or request.reasoning.generate_summary) is not None,
        )

    def prepare_protocol(
        self, conversation: Conversation, *, model: str | None, stream: bool, protocol: str
    ) -> Prepared:
        """A run of ``conversation`` that came in on ``protocol`` (a key of :data:`ID_PREFIXES`).

        Chat Completions and Messages responses are not stored (neither protocol can read one
        back), so the request this Prepared carries only says that: a Responses request with
        ``store: false`` and the model and streaming of the original.
        """
        name = model or self.engine.model_name
        run = self.protocol_run(conversation, model=name, echo={}, prefix=ID_PREFIXES[protocol])
        stand_in = ResponsesRequest(model=name, stream=stream, store=False)
        return Prepared(request=stand_in, conversation=conversation, run=run, protocol=protocol)

    def protocol_run(
        self,
        conversation: Conversation,
        *,
        model: str,
        echo: dict[str, Any],
        prefix: str,
        reasoning_summary: bool = False,
    ) -> ResponseRun:
        """A run for ``conversation`` under any protocol: ``prefix`` names its ids (``resp``,
        ``chatcmpl``, ``msg``) and ``echo`` is what the Responses body repeats of the request."""
        prompt = self.renderer.render(conversation)
        constraint = output_constraint(conversation, self.profile.tool_parser)
        self.warn_unenforced(conversation, constraint)
        generation = GenerationRequest(
            prompt=prompt,
            max_tokens=conversation.max_output_tokens,
            sampling=Sampling(
                temperature=conversation.temperature,
                top_p=conversation.top_p,
                top_k=conversation.top_k,
                seed=conversation.seed,
            ),
            stop=(*self.profile.stop, *conversation.stop),
            cache_key=conversation.prompt_cache_key,
            required_tool=(
                conversation.tool_choice if conversation.tool_choice not in ("auto", "none") else None
            ),
            constraint=constraint,
            hints=RequestHints(
                last_input=conversation.last_input,
                last_item_type=conversation.last_item_type,
                tool_names=tuple(t.name for t in conversation.tools),
            ),
        )
        response_id = self.new_id(prefix)
        generation = _with_id(generation, response_id)
        opened = Opened(
            response_id=response_id,
            created_at=int(time.time()),
            model=model,
            echo=echo,
            reasoning_summary=reasoning_summary,
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
            parse=ParseStage(
                self.reasoning(conversation.thinking, self.renderer.reasoning_start(prompt, self.reasoning)),
                tool_parser,
            ),
            tracker=tracker,
            keepalive_interval=self.keepalive_interval,
            observers=self.observers(),
        )


def _echo(request: ResponsesRequest) -> dict[str, Any]:
    echo = response_echo(request)
    conversation_id = conversation_ref(request.conversation)
    if conversation_id is not None:
        # The response names the conversation it belongs to, as OpenAI's does.
        echo["conversation"] = {"id": conversation_id}
    return echo


def _with_id(request: GenerationRequest, response_id: str) -> GenerationRequest:
    import msgspec

    return msgspec.structs.replace(request, request_id=response_id)


def output_constraint(conversation: Conversation, tool_format: str | None) -> OutputConstraint | None:
    """What the engine should constrain decoding to: ``text.format`` JSON, or a required / named tool call
    (only in the Hermes format, the one the embedded engine's grammars write)."""
    fmt = conversation.text_format
    if fmt is not None and fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), dict):
        return OutputConstraint(json_schema=json.dumps(fmt["schema"]), name=str(fmt.get("name") or "output"))
    if fmt is not None and fmt.get("type") == "json_object":
        return OutputConstraint(json_schema='{"type": "object"}')
    choice = conversation.tool_choice
    if choice in ("auto", "none") or tool_format != "hermes":
        return None
    tools = [t for t in conversation.tools if choice == "required" or t.name == choice]
    if not tools:
        return None
    return OutputConstraint(
        tools=tuple(ToolSchema(name=t.name, parameters=json.dumps(t.parameters or {})) for t in tools),
        tool_format=tool_format,
    )
