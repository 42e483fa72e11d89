"""Round trips through the HTTP server with the scripted engine, driven by the openai SDK (issue 4).

Each test plays one agent loop: the model calls, the client answers in the shape real
clients use, and the next turn is accepted and answered. The reasoning round trip also
checks the prompt the next turn renders, through the same service the server runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest

from accord.adapters.build import build_service
from accord.adapters.requests import RequestLimits, decode_request
from accord.config import Settings
from tests.serving import Server, running, scripted_settings, write_script


def hermes(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


PATCH = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
#: Words of the reasoning the ``think`` rule writes, long enough that random base64 does not hold
#: them by chance; none may show through its sealed form.
REASONING_WORDS = ("secret", "plan")
RULES: list[dict[str, Any]] = [
    {
        "when": {"last_item_type": "function_call_output", "last_input": "sunny"},
        "output": "It is sunny in Paris.",
    },
    {"when": {"last_item_type": "function_call_output", "last_input": "closed"}, "output": "Agent closed."},
    {"when": {"last_item_type": "custom_tool_call_output"}, "output": "Patched."},
    {"when": {"last_input": "^weather"}, "output": hermes("get_weather", {"city": "Paris"})},
    {"when": {"last_input": "^patch"}, "output": hermes("apply_patch", {"input": PATCH})},
    {"when": {"last_input": "^agent"}, "output": hermes("multi_agent_v1.close_agent", {"target": "a1"})},
    {"when": {"last_input": "^think"}, "output": "<think>The secret plan is 42.</think>Done thinking."},
    {"output": "ok"},
]
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files.",
    "format": {"type": "text"},
}
AGENTS = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Sub-agents.",
    "tools": [
        {
            "type": "function",
            "name": "close_agent",
            "parameters": {"type": "object", "properties": {"target": {"type": "string"}}},
        }
    ],
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    script = write_script(tmp_path_factory.mktemp("round_trips"), RULES)
    return scripted_settings(script, reasoning_parser="glm45", tool_parser="hermes", web_search="drop")


@pytest.fixture(scope="module")
def server(settings: Settings) -> Iterator[Server]:
    with running(settings) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.v1, api_key="unused", max_retries=0, timeout=20)


def items(response: Any) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", exclude_none=True) for item in response.output]


@pytest.mark.parametrize(
    "output",
    [
        "sunny",
        [
            {"type": "input_text", "text": "sunny"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
        ],
    ],
    ids=["string", "part_list"],
)
def test_function_call_then_output_then_answer(client: openai.OpenAI, output: Any) -> None:
    first = client.responses.create(model="m", input="weather in Paris?", tools=[WEATHER])
    (call,) = [i for i in items(first) if i["type"] == "function_call"]
    assert (call["name"], json.loads(call["arguments"])) == ("get_weather", {"city": "Paris"})
    history: list[Any] = [{"role": "user", "content": "weather in Paris?"}, *items(first)]
    second = client.responses.create(
        model="m",
        input=[*history, {"type": "function_call_output", "call_id": call["call_id"], "output": output}],
        tools=[WEATHER],
    )
    assert second.output_text == "It is sunny in Paris."


def test_custom_apply_patch_round_trip(client: openai.OpenAI) -> None:
    first = client.responses.create(model="m", input="patch the file", tools=[APPLY_PATCH])
    (call,) = [i for i in items(first) if i["type"] == "custom_tool_call"]
    assert (call["name"], call["input"]) == ("apply_patch", PATCH)
    second = client.responses.create(
        model="m",
        input=[
            {"role": "user", "content": "patch the file"},
            *items(first),
            {"type": "custom_tool_call_output", "call_id": call["call_id"], "output": "Exit code: 0"},
        ],
        tools=[APPLY_PATCH],
    )
    assert second.output_text == "Patched."


def test_namespaced_call_round_trip(client: openai.OpenAI) -> None:
    first = client.responses.create(model="m", input="agent close a1", tools=[AGENTS])  # type: ignore[list-item]
    (call,) = [i for i in items(first) if i["type"] == "function_call"]
    assert (call["namespace"], call["name"]) == ("multi_agent_v1", "close_agent")
    second = client.responses.create(
        model="m",
        input=[
            {"role": "user", "content": "agent close a1"},
            *items(first),
            {"type": "function_call_output", "call_id": call["call_id"], "output": "closed"},
        ],
        tools=[AGENTS],  # type: ignore[list-item]
    )
    assert second.output_text == "Agent closed."


def test_sealed_reasoning_is_replayed_into_the_next_prompt(client: openai.OpenAI, settings: Settings) -> None:
    """SPEC I4: returned with encrypted_content, replayed with content null, rendered as the original text."""
    first = client.responses.create(
        model="m", input="think hard", store=False, include=["reasoning.encrypted_content"]
    )
    (reasoning,) = [i for i in items(first) if i["type"] == "reasoning"]
    # The blob is sealed: the reasoning's words do not appear in it (a two-character check such as
    # "42" matches random base64 about one time in sixty).
    sealed = reasoning["encrypted_content"]
    assert sealed and not any(word in sealed for word in REASONING_WORDS)
    replayed = {**reasoning, "content": None}
    body = {
        "model": "m",
        "input": [
            {"role": "user", "content": "think hard"},
            replayed,
            *[i for i in items(first) if i["type"] == "message"],
            {"role": "user", "content": "and now?"},
        ],
    }
    second = client.responses.create(**body)
    assert second.output_text == "ok"

    service = build_service(settings)
    request = decode_request(json.dumps(body).encode(), RequestLimits())
    prepared = anyio.run(service.prepare, request)
    assert "The secret plan is 42." in str(prepared.run.request.prompt)


def test_web_search_with_external_access_is_refused_under_the_default_policy(tmp_path: Path) -> None:
    strict = scripted_settings(write_script(tmp_path, RULES))
    with running(strict) as srv:
        c = openai.OpenAI(base_url=srv.v1, api_key="unused", max_retries=0, timeout=20)
        with pytest.raises(openai.BadRequestError) as info:
            c.responses.create(model="m", input="hi", tools=[{"type": "web_search"}])
    assert 'web_search = "disabled"' in str(info.value) and info.value.status_code == 400
