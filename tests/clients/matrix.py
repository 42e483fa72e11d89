"""The client matrix: one scripted engine, one rules file, the scenarios every client is driven through.

Every client test in this folder talks to a real accord (hypercorn on loopback, scripted engine) and
asserts on what the client library itself returns. The rules pick an output by the last user input,
so each scenario names itself in its prompt:

- ``plain``: a short text answer in several chunks.
- ``weather`` (with a ``get_weather`` tool): a Hermes ``<tool_call>``; after the tool's output, a text.
- ``keepalive``: chunks separated by pauses several keepalive intervals long, so keepalives arrive
  between deltas of an item already open (the case of issue 15, item 1).
- ``structured``: a JSON object matching :data:`CITY_SCHEMA`.
- ``think``: ``<think>…</think>`` before the answer; the glm45 reasoning parser makes it a reasoning
  item, and ``reasoning.summary`` makes its text a summary as well.
- continuation: any prompt with ``previous_response_id``; the check is that the engine saw the
  earlier turn (its prompt, so ``usage.input_tokens``, is longer than the same prompt alone).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

KEEPALIVE_INTERVAL = 0.1
#: Longer than the keepalive interval, so at least one keepalive lands between two deltas.
PAUSE = 0.35

PLAIN_TEXT = "Hello there, how can I help you today?"
TOOL_ANSWER = "It is sunny in Paris."
KEEPALIVE_CHUNKS = ["Hold ", "on, ", "here ", "it is."]
KEEPALIVE_TEXT = "".join(KEEPALIVE_CHUNKS)
CITY = {"city": "Paris", "temperature": 21}
REASONING = "The user wants two plus two. That is four."
THINK_ANSWER = "The answer is 4."


class City(BaseModel):
    """:data:`CITY` as the model a client that parses structured output fills."""

    city: str
    temperature: int


CITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temperature": {"type": "integer"}},
    "required": ["city", "temperature"],
    "additionalProperties": False,
}

WEATHER_TOOL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}

RULES: list[dict[str, Any]] = [
    {
        "when": {"last_input": "(?i)weather", "tool": "get_weather"},
        "output": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        "chunk_chars": 7,
    },
    {"when": {"last_item_type": "function_call_output"}, "output": TOOL_ANSWER, "chunk_chars": 3},
    {
        "when": {"last_input": "(?i)keepalive"},
        "chunks": KEEPALIVE_CHUNKS,
        "first_chunk_delay_s": PAUSE,
        "chunk_delay_s": PAUSE,
    },
    {
        "when": {"last_input": "(?i)structured"},
        "output": '{"city": "Paris", "temperature": 21}',
        "chunk_chars": 6,
    },
    {
        "when": {"last_input": "(?i)think"},
        "output": f"<think>{REASONING}</think>{THINK_ANSWER}",
        "chunk_chars": 5,
    },
    {"output": PLAIN_TEXT, "chunk_chars": 5},
]
