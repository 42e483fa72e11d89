"""langchain-openai's ChatOpenAI on the Responses API against accord, invoked and streamed."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

from tests.clients.matrix import (
    CITY,
    KEEPALIVE_TEXT,
    PLAIN_TEXT,
    REASONING,
    THINK_ANSWER,
    TOOL_ANSWER,
    WEATHER_TOOL_PARAMETERS,
    City,
)
from tests.serving import Server

pytestmark = pytest.mark.slow

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "description": "The weather.", "parameters": WEATHER_TOOL_PARAMETERS},
}


def chat(server: Server, **extra: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model="scripted",
        base_url=server.v1,
        api_key="unused",  # type: ignore[arg-type]
        use_responses_api=True,
        max_retries=0,
        timeout=20,
        **extra,
    )


def call(model: Any, messages: list[BaseMessage] | str, streamed: bool) -> AIMessage:
    if not streamed:
        return model.invoke(messages)  # type: ignore[no-any-return]
    total: AIMessageChunk | None = None
    for chunk in model.stream(messages):
        total = chunk if total is None else total + chunk
    assert total is not None
    return total


@pytest.mark.parametrize("streamed", [False, True])
def test_plain(server: Server, streamed: bool) -> None:
    assert call(chat(server), "hi", streamed).text == PLAIN_TEXT


@pytest.mark.parametrize("streamed", [False, True])
def test_tool_loop(server: Server, streamed: bool) -> None:
    model = chat(server).bind_tools([WEATHER])
    question = HumanMessage("What is the weather in Paris?")
    first = call(model, [question], streamed)
    [tool_call] = first.tool_calls
    assert tool_call["name"] == "get_weather" and tool_call["args"] == {"city": "Paris"}
    answer = ToolMessage("sunny", tool_call_id=tool_call["id"])
    second = call(model, [question, first, answer], streamed)
    assert second.text == TOOL_ANSWER


@pytest.mark.parametrize("streamed", [False, True])
def test_keepalive_mid_stream(server: Server, streamed: bool) -> None:
    assert call(chat(server), "keepalive please", streamed).text == KEEPALIVE_TEXT


@pytest.mark.parametrize("streamed", [False, True])
def test_structured_output(server: Server, streamed: bool) -> None:
    model = chat(server).with_structured_output(City, method="json_schema", strict=True)
    if streamed:
        *_, last = model.stream("structured weather report")
    else:
        last = model.invoke("structured weather report")
    assert last == City(**CITY)


@pytest.mark.parametrize("streamed", [False, True])
def test_continuation(server: Server, streamed: bool) -> None:
    model = chat(server, use_previous_response_id=True)
    first = call(model, [HumanMessage("hi, remember the word tangerine")], streamed)
    second = call(
        model, [HumanMessage("hi, remember the word tangerine"), first, HumanMessage("and now?")], streamed
    )
    alone = call(chat(server), "and now?", streamed)
    assert second.text == PLAIN_TEXT
    assert second.usage_metadata is not None and alone.usage_metadata is not None
    assert second.usage_metadata["input_tokens"] > alone.usage_metadata["input_tokens"]
    # LangChain sent only the new turn and named the first response (the server says so).
    stored = httpx.get(f"{server.v1}/responses/{second.response_metadata['id']}").json()
    assert stored["previous_response_id"] == first.response_metadata["id"]


@pytest.mark.parametrize("streamed", [False, True])
def test_reasoning_blocks(server: Server, streamed: bool) -> None:
    model = chat(server, reasoning={"summary": "auto"})
    message = call(model, "think about 2+2", streamed)
    reasoning = [block for block in message.content_blocks if block["type"] == "reasoning"]
    assert "".join(str(block.get("reasoning", "")) for block in reasoning) == REASONING
    assert message.text == THINK_ANSWER
