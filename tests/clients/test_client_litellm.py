"""LiteLLM's Responses API bridge (``litellm.responses``) against accord as an OpenAI provider."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

# LiteLLM fetches its model price list from the network at import unless told to use its own copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

from tests.clients.matrix import (
    CITY,
    CITY_SCHEMA,
    KEEPALIVE_TEXT,
    PLAIN_TEXT,
    REASONING,
    THINK_ANSWER,
    TOOL_ANSWER,
    WEATHER_TOOL_PARAMETERS,
)
from tests.serving import Server

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning:pydantic.*")]

TOOLS = [{"type": "function", "name": "get_weather", "parameters": WEATHER_TOOL_PARAMETERS, "strict": True}]


def respond(server: Server, streamed: bool, **body: Any) -> tuple[Any, list[str]]:
    """The final response and the event types LiteLLM passed on (none when not streamed)."""
    common: dict[str, Any] = {"model": "openai/scripted", "api_base": server.v1, "api_key": "unused"}
    if not streamed:
        return litellm.responses(**common, **body), []
    kinds: list[str] = []
    final = None
    for event in litellm.responses(**common, **body, stream=True):
        kinds.append(str(getattr(event.type, "value", event.type)))  # LiteLLM types them as an enum
        if event.type == "response.completed":
            final = event.response
    assert final is not None, kinds
    return final, kinds


def text_of(response: Any) -> str:
    return "".join(
        part.text
        for item in response.output
        if item.type == "message"
        for part in item.content
        if part.type == "output_text"
    )


@pytest.mark.parametrize("streamed", [False, True])
def test_plain(server: Server, streamed: bool) -> None:
    response, _ = respond(server, streamed, input="hi")
    assert text_of(response) == PLAIN_TEXT


@pytest.mark.parametrize("streamed", [False, True])
def test_tool_loop(server: Server, streamed: bool) -> None:
    first, _ = respond(server, streamed, input="What is the weather in Paris?", tools=TOOLS)
    [call] = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    second, _ = respond(
        server,
        streamed,
        previous_response_id=first.id,
        tools=TOOLS,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
    )
    assert text_of(second) == TOOL_ANSWER


@pytest.mark.parametrize("streamed", [False, True])
def test_keepalive_mid_stream(server: Server, streamed: bool) -> None:
    before = server.app.metrics.keepalives
    response, kinds = respond(server, streamed, input="keepalive please")
    assert text_of(response) == KEEPALIVE_TEXT
    if streamed:
        # accord sent keepalives between the deltas; LiteLLM's stream iterator passes on only the
        # first in_progress and renumbers what it yields, so they are counted at the server.
        assert server.app.metrics.keepalives > before
        assert kinds.count("response.output_text.delta") == 4


@pytest.mark.parametrize("streamed", [False, True])
def test_structured_output(server: Server, streamed: bool) -> None:
    text = {"format": {"type": "json_schema", "name": "city", "schema": CITY_SCHEMA, "strict": True}}
    response, _ = respond(server, streamed, input="structured weather report", text=text)
    assert json.loads(text_of(response)) == CITY


@pytest.mark.parametrize("streamed", [False, True])
def test_continuation(server: Server, streamed: bool) -> None:
    alone, _ = respond(server, streamed, input="and now?")
    first, _ = respond(server, streamed, input="hi, remember the word tangerine")
    second, _ = respond(server, streamed, input="and now?", previous_response_id=first.id)
    assert text_of(second) == PLAIN_TEXT
    assert second.usage.input_tokens > alone.usage.input_tokens


@pytest.mark.parametrize("streamed", [False, True])
def test_reasoning_summary(server: Server, streamed: bool) -> None:
    response, kinds = respond(server, streamed, input="think about 2+2", reasoning={"summary": "auto"})
    [reasoning] = [item for item in response.output if item.type == "reasoning"]
    assert [part.text for part in reasoning.summary] == [REASONING]
    assert text_of(response) == THINK_ANSWER
    if streamed:
        assert "response.reasoning_summary_text.delta" in kinds
