"""The OpenAI Agents SDK against accord: Runner on OpenAIResponsesModel, streamed and not; sessions."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import openai
import pytest
from agents import (
    Agent,
    ModelSettings,
    OpenAIConversationsSession,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    responses_websocket_session,
    set_tracing_disabled,
)
from openai.types.shared import Reasoning

from tests.clients.matrix import KEEPALIVE_TEXT, PLAIN_TEXT, REASONING, THINK_ANSWER, TOOL_ANSWER, City
from tests.serving import Server

pytestmark = pytest.mark.slow
T = TypeVar("T")

set_tracing_disabled(True)


calls: list[str] = []


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    calls.append(city)
    return "sunny"


def model(server: Server) -> OpenAIResponsesModel:
    client = openai.AsyncOpenAI(base_url=server.v1, api_key="unused", max_retries=0, timeout=20)
    return OpenAIResponsesModel(model="scripted", openai_client=client)


def run(coro: Callable[[], Awaitable[T]]) -> T:
    # The Agents SDK runs on asyncio only; the server under it runs both worker classes.
    return asyncio.run(coro())  # type: ignore[arg-type]


async def go(agent: Agent[Any], prompt: str, streamed: bool, **kwargs: Any) -> Any:
    if not streamed:
        return await Runner.run(agent, prompt, **kwargs)
    result = Runner.run_streamed(agent, prompt, **kwargs)
    async for _ in result.stream_events():
        pass
    return result


@pytest.mark.parametrize("streamed", [False, True])
def test_plain(server: Server, streamed: bool) -> None:
    agent = Agent(name="a", model=model(server))
    assert run(lambda: go(agent, "hi", streamed)).final_output == PLAIN_TEXT


@pytest.mark.parametrize("streamed", [False, True])
def test_tool_loop(server: Server, streamed: bool) -> None:
    calls.clear()
    agent = Agent(name="a", model=model(server), tools=[get_weather])
    result = run(lambda: go(agent, "What is the weather in Paris?", streamed))
    assert result.final_output == TOOL_ANSWER
    assert calls == ["Paris"]


@pytest.mark.parametrize("streamed", [False, True])
def test_keepalive_mid_stream(server: Server, streamed: bool) -> None:
    agent = Agent(name="a", model=model(server))
    assert run(lambda: go(agent, "keepalive please", streamed)).final_output == KEEPALIVE_TEXT


@pytest.mark.parametrize("streamed", [False, True])
def test_structured_output(server: Server, streamed: bool) -> None:
    agent = Agent(name="a", model=model(server), output_type=City)
    result = run(lambda: go(agent, "structured weather report", streamed))
    assert result.final_output == City(city="Paris", temperature=21)


@pytest.mark.parametrize("streamed", [False, True])
def test_continuation(server: Server, streamed: bool) -> None:
    agent = Agent(name="a", model=model(server))

    async def both() -> tuple[Any, Any, Any]:
        alone = await go(agent, "and now?", streamed)
        first = await go(agent, "hi, remember the word tangerine", streamed)
        second = await go(agent, "and now?", streamed, previous_response_id=first.last_response_id)
        return alone, first, second

    alone, _, second = run(both)
    assert second.final_output == PLAIN_TEXT
    tokens = [r.context_wrapper.usage.input_tokens for r in (alone, second)]
    assert tokens[1] > tokens[0]


@pytest.mark.parametrize("streamed", [False, True])
def test_reasoning_summary(server: Server, streamed: bool) -> None:
    settings = ModelSettings(reasoning=Reasoning(summary="auto"))
    agent = Agent(name="a", model=model(server), model_settings=settings)
    result = run(lambda: go(agent, "think about 2+2", streamed))
    assert result.final_output == THINK_ANSWER
    [reasoning] = [item for item in result.new_items if item.type == "reasoning_item"]
    assert [part.text for part in reasoning.raw_item.summary] == [REASONING]


@pytest.mark.parametrize("streamed", [False, True])
def test_conversations_session(server: Server, streamed: bool) -> None:
    """The extra: OpenAIConversationsSession keeps the history in /v1/conversations."""
    client = openai.AsyncOpenAI(base_url=server.v1, api_key="unused", max_retries=0, timeout=20)
    agent = Agent(name="a", model=model(server), tools=[get_weather])

    async def turns() -> tuple[Any, Any, list[Any]]:
        session = OpenAIConversationsSession(openai_client=client)
        first = await go(agent, "What is the weather in Paris?", streamed, session=session)
        second = await go(agent, "and now?", streamed, session=session)
        return first, second, await session.get_items()

    first, second, items = run(turns)
    assert first.final_output == TOOL_ANSWER and second.final_output == PLAIN_TEXT
    kinds = [item.get("type", "message") for item in items]
    assert kinds == ["message", "function_call", "function_call_output", "message", "message", "message"]


@pytest.mark.parametrize("streamed", [False, True])
def test_server_managed_conversation(server: Server, streamed: bool) -> None:
    """conversation_id: accord keeps the turns itself, the SDK sends only what is new."""
    client = openai.AsyncOpenAI(base_url=server.v1, api_key="unused", max_retries=0, timeout=20)
    agent = Agent(name="a", model=model(server), tools=[get_weather])

    async def turns() -> tuple[Any, Any, list[Any]]:
        conversation = await client.conversations.create()
        first = await go(agent, "What is the weather in Paris?", streamed, conversation_id=conversation.id)
        second = await go(agent, "and now?", streamed, conversation_id=conversation.id)
        listed = [item async for item in client.conversations.items.list(conversation.id, order="asc")]
        return first, second, listed

    first, second, listed = run(turns)
    assert first.final_output == TOOL_ANSWER and second.final_output == PLAIN_TEXT
    assert [item.type for item in listed] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
        "message",
        "message",
    ]


@pytest.mark.parametrize("streamed", [False, True])
def test_websocket_session(server: Server, streamed: bool) -> None:
    """The extra: responses_websocket_session, a tool loop and a continuation on one socket."""
    calls.clear()

    async def turns() -> tuple[Any, Any]:
        async with responses_websocket_session(api_key="unused", base_url=server.v1) as ws:
            agent = Agent(name="a", model="scripted", tools=[get_weather])
            first = await ws_go(ws, agent, "What is the weather in Paris?", streamed)
            second = await ws_go(
                ws, agent, "keepalive please", streamed, previous_response_id=first.last_response_id
            )
            return first, second

    first, second = run(turns)
    assert first.final_output == TOOL_ANSWER and calls == ["Paris"]
    assert second.final_output == KEEPALIVE_TEXT


async def ws_go(ws: Any, agent: Agent[Any], prompt: str, streamed: bool, **kwargs: Any) -> Any:
    if not streamed:
        return await ws.run(agent, prompt, **kwargs)
    result = ws.run_streamed(agent, prompt, **kwargs)
    async for _ in result.stream_events():
        pass
    return result
