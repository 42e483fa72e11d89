"""pydantic-ai's OpenAIResponsesModel against accord; streamed runs go through an event stream handler."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable
from typing import Any

import httpx
import pytest
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.messages import ModelResponse, ThinkingPart
from pydantic_ai.models.openai import OpenAIResponsesModel, OpenAIResponsesModelSettings
from pydantic_ai.providers.openai import OpenAIProvider

from tests.clients.matrix import CITY, KEEPALIVE_TEXT, PLAIN_TEXT, REASONING, THINK_ANSWER, TOOL_ANSWER, City
from tests.serving import Server

pytestmark = pytest.mark.slow


def model(server: Server) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("scripted", provider=OpenAIProvider(base_url=server.v1, api_key="unused"))


async def go(agent: Agent[Any, Any], prompt: str, streamed: bool, **kwargs: Any) -> tuple[Any, list[str]]:
    """The run result, and the kinds of stream events seen (streamed runs only)."""
    kinds: list[str] = []

    async def handler(_ctx: Any, events: AsyncIterable[Any]) -> None:
        async for event in events:
            kinds.append(type(event).__name__)

    if streamed:
        result = await agent.run(prompt, event_stream_handler=handler, **kwargs)
        assert "PartDeltaEvent" in kinds, kinds
    else:
        result = await agent.run(prompt, **kwargs)
    return result, kinds


def run(agent: Agent[Any, Any], prompt: str, streamed: bool, **kwargs: Any) -> Any:
    return asyncio.run(go(agent, prompt, streamed, **kwargs))[0]


@pytest.mark.parametrize("streamed", [False, True])
def test_plain(server: Server, streamed: bool) -> None:
    assert run(Agent(model(server)), "hi", streamed).output == PLAIN_TEXT


@pytest.mark.parametrize("streamed", [False, True])
def test_tool_loop(server: Server, streamed: bool) -> None:
    agent = Agent(model(server))
    seen: list[str] = []

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        seen.append(city)
        return "sunny"

    assert run(agent, "What is the weather in Paris?", streamed).output == TOOL_ANSWER
    assert seen == ["Paris"]


@pytest.mark.parametrize("streamed", [False, True])
def test_keepalive_mid_stream(server: Server, streamed: bool) -> None:
    assert run(Agent(model(server)), "keepalive please", streamed).output == KEEPALIVE_TEXT


@pytest.mark.parametrize("streamed", [False, True])
def test_structured_output(server: Server, streamed: bool) -> None:
    agent = Agent(model(server), output_type=NativeOutput(City))
    assert run(agent, "structured weather report", streamed).output == City(**CITY)


@pytest.mark.parametrize("streamed", [False, True])
def test_continuation(server: Server, streamed: bool) -> None:
    agent = Agent(model(server))
    alone = run(agent, "and now?", streamed)
    first = run(agent, "hi, remember the word tangerine", streamed)
    first_id = first.all_messages()[-1].provider_response_id
    settings = OpenAIResponsesModelSettings(openai_previous_response_id=first_id)
    second = run(agent, "and now?", streamed, model_settings=settings)
    assert second.output == PLAIN_TEXT
    assert second.usage.input_tokens > alone.usage.input_tokens
    stored = httpx.get(f"{server.v1}/responses/{second.all_messages()[-1].provider_response_id}").json()
    assert stored["previous_response_id"] == first_id


@pytest.mark.parametrize("streamed", [False, True])
def test_thinking_part(server: Server, streamed: bool) -> None:
    settings = OpenAIResponsesModelSettings(openai_reasoning_summary="auto")
    result = run(Agent(model(server), model_settings=settings), "think about 2+2", streamed)
    assert result.output == THINK_ANSWER
    thinking = [
        part
        for message in result.all_messages()
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ThinkingPart)
    ]
    assert "".join(part.content for part in thinking) == REASONING
