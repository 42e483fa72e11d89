"""openai-python against accord: every scenario of the matrix, streamed and not, and responses.connect()."""

from __future__ import annotations

from functools import partial
from typing import Any

import openai
import pytest

from tests.clients import responses_scenarios as scenarios
from tests.clients.matrix import KEEPALIVE_TEXT, PLAIN_TEXT, TOOL_ANSWER
from tests.clients.responses_scenarios import TOOLS
from tests.serving import Server

pytestmark = pytest.mark.slow


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
    scenarios.tool_loop(partial(create, server), streamed)


@pytest.mark.parametrize("streamed", [False, True])
def test_keepalive_mid_stream(server: Server, streamed: bool) -> None:
    response, kinds = create(server, streamed, input="keepalive please")
    assert response.output_text == KEEPALIVE_TEXT
    if streamed:
        first_delta = kinds.index("response.output_text.delta")
        assert "response.in_progress" in kinds[first_delta:], kinds


@pytest.mark.parametrize("streamed", [False, True])
def test_structured_output(server: Server, streamed: bool) -> None:
    scenarios.structured_output(partial(create, server), streamed)


@pytest.mark.parametrize("streamed", [False, True])
def test_continuation(server: Server, streamed: bool) -> None:
    first, second = scenarios.continuation(partial(create, server), streamed)
    assert second.previous_response_id == first.id


@pytest.mark.parametrize("streamed", [False, True])
def test_reasoning_summary(server: Server, streamed: bool) -> None:
    scenarios.reasoning_summary(partial(create, server), streamed)


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
