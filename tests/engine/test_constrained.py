"""Constrained decoding on the embedded engine (SPEC P9, ``text.format`` json_schema; issue acceptance).

A 135M model follows a schema only because the grammar lets it: every output must be valid, whatever
the seed. Requests run concurrently, so they share batches, as they would behind the server.
"""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import anyio
import jsonschema
import pytest

from accord.engine.local import LocalEngine
from accord.engine.protocol import GenerationRequest, OutputConstraint, Sampling, ToolSchema
from accord.events.generation import Chunk, EngineFailed, Finished, GenerationOutput
from accord.pipeline.segments import ToolCall, ToolSpec
from accord.pipeline.tools._hermes import hermes
from tests.engine.conftest import chatml

pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.anyio]


def one_backend(backend: str) -> pytest.MarkDecorator:
    """The fifty-request suites run once, on one backend each: the work is the engine thread's,
    the same under both, and the small tests below still run under both."""
    return pytest.mark.parametrize("anyio_backend", [backend])


SCHEMAS: list[dict[str, Any]] = [
    {  # required fields of two types
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    {  # an enum
        "type": "object",
        "properties": {
            "colour": {"enum": ["red", "green", "blue"]},
            "count": {"type": "integer", "minimum": 0},
        },
        "required": ["colour"],
        "additionalProperties": False,
    },
    {  # a nested object
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "location": {
                "type": "object",
                "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                "required": ["lat", "lon"],
                "additionalProperties": False,
            },
        },
        "required": ["city", "location"],
        "additionalProperties": False,
    },
    {  # an array with bounds
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 4}},
        "required": ["tags"],
        "additionalProperties": False,
    },
    {  # an array of objects with enums, and a boolean
        "type": "object",
        "properties": {
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"action": {"enum": ["add", "remove"]}, "item": {"type": "string"}},
                    "required": ["action", "item"],
                    "additionalProperties": False,
                },
            },
            "done": {"type": "boolean"},
        },
        "required": ["steps", "done"],
        "additionalProperties": False,
    },
]
QUESTIONS = [
    "Describe a person as JSON.",
    "Pick a colour, as JSON.",
    "Where is Paris? Answer as JSON.",
    "Tag this sentence: the cat sat on the mat. Answer as JSON.",
    "Plan a shopping list as JSON.",
]
WEATHER = ToolSpec(
    name="get_weather",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = ToolSpec(
    name="get_time",
    parameters={"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]},
)
MAX_TOKENS = 256


async def run(engine: LocalEngine, request: GenerationRequest) -> tuple[str, Finished]:
    async with aclosing(engine.generate(request)) as stream:
        events: list[GenerationOutput] = [e async for e in stream]
    last = events[-1]
    assert isinstance(last, Finished), last
    return "".join(e.text for e in events if isinstance(e, Chunk)), last


async def run_all(engine: LocalEngine, requests: list[GenerationRequest]) -> list[tuple[str, Finished]]:
    results: dict[int, tuple[str, Finished]] = {}

    async def one(i: int) -> None:
        results[i] = await run(engine, requests[i])

    async with anyio.create_task_group() as tg:
        for i in range(len(requests)):
            tg.start_soon(one, i)
    return [results[i] for i in range(len(requests))]


def schema_request(i: int, seed: int, temperature: float | None = None) -> GenerationRequest:
    return GenerationRequest(
        prompt=chatml(QUESTIONS[i % 5]),
        max_tokens=MAX_TOKENS,
        sampling=Sampling(seed=seed, temperature=temperature),
        constraint=OutputConstraint(json_schema=json.dumps(SCHEMAS[i % 5])),
    )


@one_backend("asyncio")
async def test_fifty_seeded_requests_over_five_schemas_are_all_valid(engine: LocalEngine) -> None:
    # The model's default sampling (temperature 0.2, top_p 0.9) and, for half, temperature 1.0.
    requests = [schema_request(i, seed=1000 + i, temperature=None if i < 25 else 1.0) for i in range(50)]
    for i, (text, done) in enumerate(await run_all(engine, requests)):
        assert done.reason == "stop", (i, text)
        jsonschema.validate(json.loads(text), SCHEMAS[i % 5])


def tool_constraint(tools: list[ToolSpec]) -> OutputConstraint:
    return OutputConstraint(
        tools=tuple(ToolSchema(name=t.name, parameters=json.dumps(t.parameters)) for t in tools)
    )


def parsed_calls(text: str, tools: list[ToolSpec]) -> list[ToolCall]:
    """The calls the ChatML profile's own parser (Hermes ``<tool_call>`` JSON) reads from ``text``."""
    parser = hermes(tools)
    segments = [*parser.feed(text), *parser.finish()]
    return [s for s in segments if isinstance(s, ToolCall)]


@one_backend("trio")
async def test_tool_choice_required_gives_a_parsed_call_fifty_times_in_fifty(engine: LocalEngine) -> None:
    tools = [WEATHER, TIME]
    requests = [
        GenerationRequest(
            prompt=chatml(q),
            max_tokens=MAX_TOKENS,
            sampling=Sampling(seed=i, temperature=None if i % 2 else 1.0),
            constraint=tool_constraint(tools),
        )
        for i, q in enumerate(
            ["What is the weather in Paris?", "What time is it?", "Hello!", "Tell me a joke."] * 13
        )
    ][:50]
    for text, done in await run_all(engine, requests):
        assert done.reason == "stop", text
        calls = parsed_calls(text, tools)
        assert len(calls) == 1, text
        tool = WEATHER if calls[0].name == "get_weather" else TIME
        jsonschema.validate(json.loads(calls[0].arguments), tool.parameters or {})


async def test_a_named_tool_is_the_one_called(engine: LocalEngine) -> None:
    requests = [
        GenerationRequest(
            prompt=chatml("What is the weather in Paris?"),
            max_tokens=MAX_TOKENS,
            sampling=Sampling(seed=i),
            constraint=tool_constraint([TIME]),
        )
        for i in range(4)
    ]
    for text, _ in await run_all(engine, requests):
        assert [c.name for c in parsed_calls(text, [WEATHER, TIME])] == ["get_time"]


@one_backend("asyncio")
async def test_a_batch_of_eight_with_different_schemas_is_batch_invariant(engine: LocalEngine) -> None:
    """Each request's tokens are the same alone and batched with seven others under other grammars."""
    requests = [schema_request(i, seed=7 + i, temperature=1.0) for i in range(8)]
    requests[5] = GenerationRequest(prompt=chatml("Say hello."), max_tokens=24, sampling=Sampling(seed=3))
    engine.reset_prefix_cache()
    alone = []
    for r in requests:
        alone.append(await run(engine, r))
        engine.reset_prefix_cache()
    together = await run_all(engine, requests)
    assert [t for t, _ in together] == [t for t, _ in alone]


async def test_an_unusable_schema_fails_the_request_cleanly(engine: LocalEngine) -> None:
    request = GenerationRequest(
        prompt=chatml("Hi"), max_tokens=8, constraint=OutputConstraint(json_schema='{"type": "no-such-type"}')
    )
    async with aclosing(engine.generate(request)) as stream:
        events = [e async for e in stream]
    assert len(events) == 1 and isinstance(events[0], EngineFailed)
