"""openai-python against accord: every scenario of the matrix, streamed and not, and responses.connect()."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

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

pytestmark = pytest.mark.slow

TOOLS: list[Any] = [
    {"type": "function", "name": "get_weather", "parameters": WEATHER_TOOL_PARAMETERS, "strict": True}
]


def client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.v1, api_key="unused", max_retries=0, timeout=20)


def create(server: Server, streamed: bool, **body: Any) -> tuple[Any, list[str]]:
    """The final response, and the event types seen (empty when not streamed)."""
    c = client(server)
    if not streamed:
        return c.responses.create(model="scripted", **body), []
    kinds: list[str] = []
    with c.responses.stream(model="scripted", **body) as stream:
        for event in stream:
            kinds.append(event.type)
        return stream.get_final_response(), kinds


@pytest.mark.parametrize("streamed", [False, True])
def test_plain(server: Server, streamed: bool) -> None:
    response, _ = create(server, streamed, input="hi")
    assert response.status == "completed"
    assert response.output_text == PLAIN_TEXT


@pytest.mark.parametrize("streamed", [False, True])
def test_tool_loop(server: Server, streamed: bool) -> None:
    first, _ = create(server, streamed, input="What is the weather in Paris?", tools=TOOLS)
    [call] = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    second, _ = create(
        server,
        streamed,
        previous_response_id=first.id,
        tools=TOOLS,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
    )
    assert second.output_text == TOOL_ANSWER


@pytest.mark.parametrize("streamed", [False, True])
def test_keepalive_mid_stream(server: Server, streamed: bool) -> None:
    response, kinds = create(server, streamed, input="keepalive please")
    assert response.output_text == KEEPALIVE_TEXT
    if streamed:
        first_delta = kinds.index("response.output_text.delta")
        assert "response.in_progress" in kinds[first_delta:], kinds


@pytest.mark.parametrize("streamed", [False, True])
def test_structured_output(server: Server, streamed: bool) -> None:
    text = {"format": {"type": "json_schema", "name": "city", "schema": CITY_SCHEMA, "strict": True}}
    response, _ = create(server, streamed, input="structured weather report", text=text)
    assert json.loads(response.output_text) == CITY


@pytest.mark.parametrize("streamed", [False, True])
def test_continuation(server: Server, streamed: bool) -> None:
    alone, _ = create(server, streamed, input="and now?")
    first, _ = create(server, streamed, input="hi, remember the word tangerine")
    second, _ = create(server, streamed, input="and now?", previous_response_id=first.id)
    assert second.output_text == PLAIN_TEXT
    assert second.previous_response_id == first.id
    assert second.usage.input_tokens > alone.usage.input_tokens


@pytest.mark.parametrize("streamed", [False, True])
def test_reasoning_summary(server: Server, streamed: bool) -> None:
    response, kinds = create(server, streamed, input="think about 2+2", reasoning={"summary": "auto"})
    [reasoning] = [item for item in response.output if item.type == "reasoning"]
    assert [part.text for part in reasoning.summary] == [REASONING]
    assert response.output_text == THINK_ANSWER
    if streamed:
        assert "response.reasoning_summary_text.delta" in kinds


def test_responses_connect(server: Server) -> None:
    """The extra: responses.connect(), several turns on one socket, a tool loop and keepalives included."""
    c = client(server)
    with c.responses.connect() as conn:
        conn.response.create(model="scripted", input="What is the weather in Paris?", tools=TOOLS)
        first = until_terminal(conn)
        [call] = [item for item in first[-1].response.output if item.type == "function_call"]
        conn.response.create(
            model="scripted",
            previous_response_id=first[-1].response.id,
            tools=TOOLS,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        )
        second = until_terminal(conn)
        conn.response.create(model="scripted", input="keepalive please")
        third = until_terminal(conn)
    assert second[-1].response.output_text == TOOL_ANSWER
    kinds = [e.type for e in third]
    assert "response.in_progress" in kinds[kinds.index("response.output_text.delta") :]
    assert third[-1].response.output_text == KEEPALIVE_TEXT
    for events in (first, second, third):
        assert [e.sequence_number for e in events] == list(range(len(events)))


def until_terminal(conn: Any) -> list[Any]:
    events = []
    for event in conn:
        events.append(event)
        if event.type in ("response.completed", "response.failed", "response.incomplete", "error"):
            return events
    raise AssertionError("the connection closed before the response ended")
