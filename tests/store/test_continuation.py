"""previous_response_id through a real server and the openai SDK (SPEC S1, S2; issue 5 acceptance)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.serving import Server
from tests.store.records import prompts, recording_server

CALL = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\n{city}\n</parameter>\n</function>\n</tool_call>"
)
RULES: list[dict[str, Any]] = [
    {
        "when": {"last_item_type": "function_call_output"},
        "output": "<think>Got it.</think>It is sunny there.",
    },
    {
        "when": {"last_input": "Paris"},
        "output": "<think>Need data.</think>Checking." + CALL.format(city="Paris"),
    },
    {"when": {"last_input": "Rome"}, "output": "<think>Again.</think>" + CALL.format(city="Rome")},
    {"output": "<think>Easy.</think>Anything else?", "chunk_chars": 7},
]
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


@pytest.fixture
def server(tmp_path: Path, worker_class: str) -> Iterator[Server]:
    with recording_server(tmp_path, RULES, worker_class=worker_class) as srv:
        yield srv


def client(server: Server) -> Any:
    """The SDK client, untyped: the tests pass items as plain JSON, which its TypedDicts spell one by one."""
    return openai.OpenAI(base_url=server.v1, api_key="unused", max_retries=0, timeout=20)


def _items(response: Any) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", exclude_none=True) for item in response.output]


def _result(response: Any, text: str) -> dict[str, Any]:
    call = next(item for item in response.output if item.type == "function_call")
    return {"type": "function_call_output", "call_id": call.call_id, "output": text}


def test_chained_turns_render_the_prompt_of_the_explicit_history(server: Server) -> None:
    """Three continuations (the last with store: false) prompt the model exactly as the whole history sent
    explicitly does: inputs, reasoning, messages, calls and results, instructions not carried over."""
    c = client(server)
    turn1 = {"input": "Weather in Paris?", "instructions": "Be terse.", "tools": TOOLS}
    r1 = c.responses.create(model="m", **turn1)
    assert [item.type for item in r1.output] == ["reasoning", "message", "function_call"]
    r2 = c.responses.create(
        model="m", tools=TOOLS, previous_response_id=r1.id, input=[_result(r1, '{"sky":"clear"}')]
    )
    r3 = c.responses.create(model="m", tools=TOOLS, previous_response_id=r2.id, input="And Rome?")
    r4 = c.responses.create(
        model="m", tools=TOOLS, previous_response_id=r3.id, store=False, input=[_result(r3, "warm")]
    )
    assert r4.output_text == "It is sunny there."
    chained = prompts(server)[-4:]

    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    c.responses.create(model="m", store=False, **turn1)
    history += [*_items(r1), _result(r1, '{"sky":"clear"}')]
    c.responses.create(model="m", store=False, tools=TOOLS, input=history)
    history += [*_items(r2), {"role": "user", "content": "And Rome?"}]
    c.responses.create(model="m", store=False, tools=TOOLS, input=history)
    history += [*_items(r3), _result(r3, "warm")]
    c.responses.create(model="m", store=False, tools=TOOLS, input=history)
    explicit = prompts(server)[-4:]

    assert chained == explicit
    assert "Be terse." in chained[0] and all("Be terse." not in p for p in chained[1:])
    assert "Checking." in chained[3] and "Rome" in chained[3] and "warm" in chained[3]
    with pytest.raises(openai.NotFoundError):
        c.responses.retrieve(r4.id)


def test_store_false_is_never_written(server: Server) -> None:
    c = client(server)
    kept = c.responses.create(model="m", input="hi")
    dropped = c.responses.create(model="m", input="hi", store=False)
    assert c.responses.retrieve(kept.id).output_text == kept.output_text
    with pytest.raises(openai.NotFoundError):
        c.responses.retrieve(dropped.id)
    with pytest.raises(openai.NotFoundError):
        c.responses.create(model="m", input="more", previous_response_id=dropped.id)


def test_a_retrieved_response_is_the_final_body(server: Server) -> None:
    """W2/W3: GET returns byte for byte the body of ``response.completed``, ids and all."""
    body = {"model": "m", "input": "Weather in Paris?", "tools": TOOLS, "stream": True}
    raw = httpx.post(server.v1 + "/responses", json=body).content
    completed = raw.rsplit(b"data: ", 1)[1].strip()
    response_id = json.loads(completed)["response"]["id"]
    got = httpx.get(server.v1 + f"/responses/{response_id}")
    assert got.content == json.dumps(json.loads(completed)["response"], separators=(",", ":")).encode()
    sdk = client(server).responses.retrieve(response_id)
    assert [item.id for item in sdk.output] == [
        item["id"] for item in json.loads(completed)["response"]["output"]
    ]


def test_item_references_resolve_to_stored_items(server: Server) -> None:
    c = client(server)
    r1 = c.responses.create(model="m", input="Weather in Paris?", tools=TOOLS)
    referenced = [{"type": "item_reference", "id": item.id} for item in r1.output]
    by_reference = [{"role": "user", "content": "Weather in Paris?"}, *referenced, _result(r1, "cold")]
    by_value = [{"role": "user", "content": "Weather in Paris?"}, *_items(r1), _result(r1, "cold")]
    c.responses.create(model="m", tools=TOOLS, input=by_reference)
    c.responses.create(model="m", tools=TOOLS, input=by_value)
    assert prompts(server)[-1] == prompts(server)[-2]
    missing = httpx.post(
        server.v1 + "/responses", json={"input": [{"type": "item_reference", "id": "msg_missing"}]}
    )
    assert missing.status_code == 400 and missing.json()["error"]["code"] == "item_not_found"


def test_input_items_list_the_request_own_items(server: Server) -> None:
    c = client(server)
    r1 = c.responses.create(model="m", input=[{"role": "user", "content": f"m{i}"} for i in range(3)])
    r2 = c.responses.create(model="m", input="next", previous_response_id=r1.id)
    page = c.responses.input_items.list(r1.id, limit=2)
    assert [item.content[0].text for item in page.data] == ["m2", "m1"]
    assert page.has_more and page.first_id == page.data[0].id and page.last_id == page.data[-1].id
    every = list(c.responses.input_items.list(r1.id, limit=1, order="asc"))
    assert [item.content[0].text for item in every] == ["m0", "m1", "m2"]
    # A continuation's own input only: its history lives with the earlier responses.
    assert [item.content[0].text for item in c.responses.input_items.list(r2.id).data] == ["next"]
    bad = httpx.get(server.v1 + f"/responses/{r1.id}/input_items", params={"limit": 0})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "limit"


def test_delete_then_everything_is_404(server: Server) -> None:
    c = client(server)
    r1 = c.responses.create(model="m", input="hi")
    deleted = httpx.delete(server.v1 + f"/responses/{r1.id}")
    assert deleted.json() == {"id": r1.id, "object": "response", "deleted": True}
    for method, path in [
        ("GET", f"/responses/{r1.id}"),
        ("GET", f"/responses/{r1.id}?stream=true"),
        ("DELETE", f"/responses/{r1.id}"),
        ("GET", f"/responses/{r1.id}/input_items"),
        ("POST", f"/responses/{r1.id}/cancel"),
    ]:
        answer = httpx.request(method, server.v1 + path)
        assert answer.status_code == 404, (method, path)
        error = answer.json()["error"]
        assert set(error) == {"message", "type", "param", "code"} and r1.id in error["message"]


def test_unknown_previous_response_is_404_and_with_conversation_400(server: Server) -> None:
    c = client(server)
    with pytest.raises(openai.NotFoundError) as missing:
        c.responses.create(model="m", input="hi", previous_response_id="resp_unknown")
    assert missing.value.code == "previous_response_not_found"
    r1 = c.responses.create(model="m", input="hi")
    with pytest.raises(openai.BadRequestError) as both:
        c.responses.create(model="m", input="hi", previous_response_id=r1.id, conversation="conv_1")
    assert both.value.param == "previous_response_id"
