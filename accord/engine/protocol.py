"""The one async protocol every engine speaks (SPEC E1).

An engine turns a :class:`GenerationRequest` into an async iterator of generation
events (``accord.events.generation``): chunks, then exactly one ``Finished`` or
``EngineFailed``. Closing the iterator early (the consumer was cancelled or the client
went away) must stop generation and release whatever the request held.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from accord.events.generation import GenerationOutput


class Sampling(msgspec.Struct, frozen=True, kw_only=True):
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None


class RequestHints(msgspec.Struct, frozen=True, kw_only=True):
    """What the request looked like, for engines that choose their output by it (scripted)."""

    last_input: str = ""
    last_item_type: str = "message"
    tool_names: tuple[str, ...] = ()


class ToolSchema(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    #: JSON text of the arguments' schema (``{}``: any object).
    parameters: str = "{}"


class OutputConstraint(msgspec.Struct, frozen=True, kw_only=True):
    """What the output must be, for engines that constrain decoding (SPEC P9, ``text.format``).

    ``json_schema``: the whole output is one JSON value valid against this schema (JSON text).
    ``tools``: the output is one call of one of these tools, written in ``tool_format`` (the model
    profile's tool-call syntax; "hermes": ``<tool_call>`` JSON ``</tool_call>``). At most one of the two.
    Remote engines pass ``json_schema`` on as ``response_format`` / ``guided_json`` where the upstream
    takes it.
    """

    json_schema: str | None = None
    #: The schema's name (``text.format.name``), for upstreams whose ``response_format`` wants one.
    name: str = "output"
    tools: tuple[ToolSchema, ...] = ()
    tool_format: str = "hermes"


def split_stops(
    stops: tuple[str, ...], special_id: Callable[[str], int | None]
) -> tuple[tuple[str, ...], dict[int, str]]:
    """``stops`` as the text stops left, and the ones that are one special token of the model.

    A stop that is a special token (harmony's ``<|call|>``) is matched on its id: the model writes
    that id only to mean it, while the same text inside a value (a call's arguments quoting the
    format) comes as ordinary tokens and is data, not the end of the output.
    """
    text: list[str] = []
    tokens: dict[int, str] = {}
    for stop in stops:
        token = special_id(stop) if stop else None
        if token is None:
            text.append(stop)
        else:
            tokens[token] = stop
    return tuple(text), tokens


class GenerationRequest(msgspec.Struct, frozen=True, kw_only=True):
    #: The rendered prompt text (chat template applied).
    prompt: str
    #: The same prompt as token ids, when the caller tokenised it.
    prompt_token_ids: tuple[int, ...] | None = None
    max_tokens: int | None = None
    sampling: Sampling = Sampling()
    stop: tuple[str, ...] = ()
    #: Affinity key for prefix caches (``prompt_cache_key``).
    cache_key: str | None = None
    #: Constrain decoding to a tool call, where the engine can (``tool_choice`` required / named).
    required_tool: str | None = None
    #: Constrained decoding; None: free text.
    constraint: OutputConstraint | None = None
    hints: RequestHints = RequestHints()
    request_id: str = ""


class PromptTokenizer(Protocol):
    """The model's own tokenizer, for an edge that takes or returns token ids."""

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


@dataclass(frozen=True, kw_only=True)
class EngineCapabilities:
    """What an engine offers beyond the protocol's core, declared by the engine (never probed for).

    The edge reads this to choose what to send, what to warn about and what to serve.
    """

    #: ``constraint.json_schema`` is followed: enforced by a grammar, or passed to an upstream that
    #: enforces it (``response_format``).
    json_schema: bool = False
    #: ``constraint.tools`` (``tool_choice`` required or a named tool) is enforced.
    tool_calls: bool = False
    #: The model's tokenizer, where the engine has it (token-id prompts on ``/v1/completions``).
    tokenizer: PromptTokenizer | None = None
    #: The model's chat template and its BOS / EOS text, where the engine read them from the model.
    chat_template: str | None = None
    bos_token: str = ""
    eos_token: str = ""
    #: Lists the models the engine's upstreams serve now (``/v1/models``); None: the engine's own.
    upstream_models: Callable[[], Awaitable[list[str]]] | None = None
    #: Asks the engine now whether it could serve a request (``/ready``): ``{"ready": bool, ...}``,
    #: the rest passed through to the client. None: ready whenever it exists (loaded at build).
    readiness: Callable[[], Awaitable[dict[str, Any]]] | None = None
    #: The engine's counters and gauges, read at each ``/metrics`` scrape; None: it keeps none.
    statistics: Callable[[], object] | None = None
    #: How many requests the engine runs in one batch; None: it does not say (an upstream's own).
    max_batch: int | None = None


class Engine(Protocol):
    """Where tokens come from."""

    @property
    def model_name(self) -> str: ...

    @property
    def capabilities(self) -> EngineCapabilities: ...

    def generate(self, request: GenerationRequest) -> AsyncGenerator[GenerationOutput, None]:
        """Stream the output of one request; see the module docstring for the contract."""
        ...

    async def count_tokens(self, prompt: str) -> int:
        """How many tokens ``prompt`` is for this engine's model."""
        ...

    async def aclose(self) -> None: ...
