"""The matrix's scenarios for clients that hand back the Responses API's own objects.

openai-python and LiteLLM's Responses bridge both return a response shaped as the API writes
it (``output`` items, ``usage``, ``id``). Each of their test files supplies how its client
creates one, streamed or not (a :data:`Create`); the checks on what comes back are written
once, here, so the two clients are held to the same answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.clients.matrix import (
    CITY,
    CITY_SCHEMA,
    PLAIN_TEXT,
    REASONING,
    THINK_ANSWER,
    TOOL_ANSWER,
    WEATHER_TOOL_PARAMETERS,
)

#: ``create(streamed, **body)``: the final response, and the event types the client passed on
#: (none when not streamed).
Create = Callable[..., tuple[Any, list[str]]]

TOOLS: list[Any] = [
    {"type": "function", "name": "get_weather", "parameters": WEATHER_TOOL_PARAMETERS, "strict": True}
]


def text_of(response: Any) -> str:
    """The text of the response's messages, read from its items (as every client has them)."""
    return "".join(
        part.text
        for item in response.output
        if item.type == "message"
        for part in item.content
        if part.type == "output_text"
    )


def tool_loop(create: Create, streamed: bool) -> None:
    """A call of ``get_weather``, its output sent back, and the answer that follows."""
    first, _ = create(streamed, input="What is the weather in Paris?", tools=TOOLS)
    [call] = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    second, _ = create(
        streamed,
        previous_response_id=first.id,
        tools=TOOLS,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
    )
    assert text_of(second) == TOOL_ANSWER


def structured_output(create: Create, streamed: bool) -> None:
    text = {"format": {"type": "json_schema", "name": "city", "schema": CITY_SCHEMA, "strict": True}}
    response, _ = create(streamed, input="structured weather report", text=text)
    assert json.loads(text_of(response)) == CITY


def continuation(create: Create, streamed: bool) -> tuple[Any, Any]:
    """Two turns linked by ``previous_response_id``; the engine saw the first (a longer prompt)."""
    alone, _ = create(streamed, input="and now?")
    first, _ = create(streamed, input="hi, remember the word tangerine")
    second, _ = create(streamed, input="and now?", previous_response_id=first.id)
    assert text_of(second) == PLAIN_TEXT
    assert second.usage.input_tokens > alone.usage.input_tokens
    return first, second


def reasoning_summary(create: Create, streamed: bool) -> None:
    response, kinds = create(streamed, input="think about 2+2", reasoning={"summary": "auto"})
    [reasoning] = [item for item in response.output if item.type == "reasoning"]
    assert [part.text for part in reasoning.summary] == [REASONING]
    assert text_of(response) == THINK_ANSWER
    if streamed:
        assert "response.reasoning_summary_text.delta" in kinds
