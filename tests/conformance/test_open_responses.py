"""Every response object, streamed event and compact result against the Open Responses schema
and the openai SDK's types (issue 15 item 6).

The schema is the Open Responses OpenAPI document, release 2026-04-24, vendored in
``data/`` (see ``data/README.md`` for its source and licence). Each object is checked
against the component the document gives it (``ResponseResource``, the streaming event
whose ``type`` it has, ``CompactResource``) and parsed by the SDK's pydantic model.

Two event families are OpenAI's and absent from the document: the document names the
reasoning text events ``response.reasoning.delta``/``.done`` where the Responses API
and its SDKs use ``response.reasoning_text.delta``/``.done`` (accord sends the latter,
which every SDK parses), and it has no custom-tool input events. Those are checked
against the SDK types only; the test names them so that any other gap fails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import openai
import pydantic
import pytest
from jsonschema import Draft202012Validator
from openai.types.responses import (
    CompactedResponse,
    Response,
    ResponseCompactionItem,
    ResponseInputMessageItem,
    ResponseStreamEvent,
)

from tests.serving import Server, parse_sse, running, scripted_settings, write_script

SPEC = Path(__file__).parent / "data" / "openresponses-2026-04-24.openapi.json"
#: Event types the Responses API sends that the document does not define (see above).
OPENAI_ONLY_EVENTS = frozenset(
    {
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
    }
)
CALL = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
RULES: list[dict[str, Any]] = [
    {
        "when": {"last_input": "^Summarize the conversation"},
        "output": "<think>Condense.</think>Paris, sunny.",
    },
    {
        "when": {"last_input": "^slow"},
        "output": "<think>Think it over.</think>A slow answer.",
        "chunk_chars": 4,
        "chunk_delay_s": 0.04,
    },
    {"when": {"last_input": "^weather"}, "output": f"<think>Need the tool.</think>{CALL}"},
    {"output": "<think>Ok.</think>Plain answer.", "chunk_chars": 5},
]
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@cache
def _document() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SPEC.read_text())
    return doc


def _validator(component: str) -> Draft202012Validator:
    """A validator for one component; its ``$ref``s resolve inside the same document."""
    doc = _document()
    return Draft202012Validator(
        {"$ref": f"#/components/schemas/{component}", "components": doc["components"]}
    )


@cache
def _event_components() -> dict[str, str]:
    """Streaming event ``type`` -> the component that defines it, from the stream's ``oneOf``."""
    doc = _document()
    stream = doc["paths"]["/responses"]["post"]["responses"]["200"]["content"]["text/event-stream"]
    out: dict[str, str] = {}
    for ref in stream["schema"]["oneOf"]:
        name = ref["$ref"].rsplit("/", 1)[1]
        (kind,) = doc["components"]["schemas"][name]["properties"]["type"]["enum"]
        out[kind] = name
    return out


def _errors(component: str, instance: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in _validator(component).iter_errors(instance)
    ]


def check_response(body: dict[str, Any]) -> None:
    assert _errors("ResponseResource", body) == []
    Response.model_validate(body)


_EVENT = pydantic.TypeAdapter(ResponseStreamEvent)


def check_events(events: list[dict[str, Any]]) -> set[str]:
    """Every event against its schema component and the SDK union; the types seen."""
    components = _event_components()
    for event in events:
        kind = event["type"]
        _EVENT.validate_python(event)
        if kind in OPENAI_ONLY_EVENTS:
            continue
        assert kind in components, f"{kind} is not an Open Responses event"
        assert _errors(components[kind], event) == [], kind
    return {e["type"] for e in events}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("conformance")
    settings = scripted_settings(
        write_script(tmp, RULES), reasoning_parser="qwen3", tool_parser="qwen3_coder", keepalive_interval=0.01
    )
    with running(settings) as srv:
        yield srv


def _post(server: Server, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(server.v1 + "/responses", json={"model": "m", **body}, timeout=20)


def _stream(server: Server, body: dict[str, Any]) -> list[dict[str, Any]]:
    resp = _post(server, {**body, "stream": True})
    assert resp.status_code == 200
    return parse_sse(resp.content)


def test_the_vendored_document_is_the_dated_release() -> None:
    doc = _document()
    assert doc["openapi"] == "3.1.0"
    assert doc["info"]["version"] == "2026-04-24"
    Draft202012Validator.check_schema({"components": doc["components"]})


@pytest.mark.parametrize(
    "body",
    [
        {"input": "hello"},
        {"input": "hello", "reasoning": {"summary": "auto"}},
        {"input": "weather?", "tools": [WEATHER_TOOL]},
        {"input": "hello", "store": False, "max_output_tokens": 3},
    ],
    ids=["plain", "summary", "call", "cut-off"],
)
def test_plain_bodies_and_stored_copies_conform(server: Server, body: dict[str, Any]) -> None:
    resp = _post(server, body)
    assert resp.status_code == 200, resp.text
    created = resp.json()
    check_response(created)
    if body.get("store", True):
        stored = httpx.get(server.v1 + f"/responses/{created['id']}")
        check_response(stored.json())


@pytest.mark.parametrize(
    "body",
    [
        {"input": "slow", "reasoning": {"summary": "detailed"}},
        {"input": "weather?", "tools": [WEATHER_TOOL]},
        {"input": "hello", "max_output_tokens": 3},
    ],
    ids=["keepalives-and-summary", "call", "cut-off"],
)
def test_every_streamed_event_and_its_replay_conform(server: Server, body: dict[str, Any]) -> None:
    events = _stream(server, body)
    seen = check_events(events)
    for event in events:
        if "response" in event:
            check_response(event["response"])
    if body["input"] == "slow":
        assert any(e["type"] == "response.in_progress" for e in events[2:]), "keepalives went out"
        assert {"response.reasoning_summary_part.added", "response.reasoning_summary_text.delta"} <= seen
    replayed = httpx.get(server.v1 + f"/responses/{events[0]['response']['id']}", params={"stream": "true"})
    assert parse_sse(replayed.content) == events


def test_the_opening_and_keepalive_snapshots_carry_every_required_field(server: Server) -> None:
    events = _stream(server, {"input": "slow"})
    for event in events:
        if event["type"] in ("response.created", "response.in_progress"):
            body = event["response"]
            assert body["completed_at"] is None
            assert body["presence_penalty"] == 0 and body["frequency_penalty"] == 0


def test_a_compact_result_conforms(server: Server) -> None:
    first = _post(server, {"input": "hello"}).json()
    resp = httpx.post(
        server.v1 + "/responses/compact",
        json={
            "model": "m",
            "previous_response_id": first["id"],
            "input": [{"role": "user", "content": "more"}],
        },
        timeout=20,
    )
    assert resp.status_code == 200, resp.text
    result = resp.json()
    assert _errors("CompactResource", result) == []
    assert [i["type"] for i in result["output"]] == ["message", "message", "compaction"]
    # The SDK types CompactedResponse.output as *output* items, which cannot hold the user
    # messages the API returns there; each item is parsed as the SDK's item of its kind.
    CompactedResponse.model_validate({**result, "output": []})
    for item in result["output"]:
        assert _errors("ItemField", item) == []
        if item["type"] == "message":
            ResponseInputMessageItem.model_validate(item)
        else:
            ResponseCompactionItem.model_validate(item)
    # The compacted output goes back as input as it came.
    again = _post(server, {"input": [*result["output"], {"role": "user", "content": "go on"}]})
    assert again.status_code == 200, again.text


def test_a_compact_request_without_a_model_is_refused(server: Server) -> None:
    resp = httpx.post(server.v1 + "/responses/compact", json={"input": "hello"}, timeout=20)
    assert resp.status_code == 400
    assert resp.json()["error"]["param"] == "model"


def test_one_model_by_id(server: Server) -> None:
    c = openai.OpenAI(base_url=server.v1, api_key="unused", max_retries=0)
    (listed,) = c.models.list().data
    assert c.models.retrieve(listed.id).model_dump() == listed.model_dump()
    with pytest.raises(openai.NotFoundError):
        c.models.retrieve("no-such-model")


def test_websocket_frames_conform(server: Server) -> None:
    """WebSocket mode: every frame is a streaming event of the document, every error a WebSocketErrorEvent."""
    from websockets.sync.client import connect

    url = server.v1.replace("http://", "ws://") + "/responses"
    frames: list[dict[str, Any]] = []
    with connect(url) as ws:
        for message in (
            {"type": "response.create", "model": "m", "input": "slow one", "reasoning": {"summary": "auto"}},
            {"type": "response.create", "model": "m", "input": "weather in Paris?", "tools": [WEATHER_TOOL]},
            {"type": "response.create", "model": "m", "input": "hi", "previous_response_id": "resp_nope"},
        ):
            assert _errors("WebSocketResponseCreateEvent", message) == []
            ws.send(json.dumps(message))
            while True:
                frames.append(json.loads(ws.recv(timeout=20)))
                if frames[-1]["type"] in ("response.completed", "error"):
                    break
    errors = [f for f in frames if f["type"] == "error"]
    assert len(errors) == 1 and errors[0]["status"] == 404
    for error in errors:
        assert _errors("WebSocketErrorEvent", error) == []
    check_events([f for f in frames if f["type"] != "error"])
    for final in (f for f in frames if f["type"] == "response.completed"):
        check_response(final["response"])


def test_a_response_in_a_conversation_conforms(server: Server) -> None:
    conversation = httpx.post(server.v1 + "/conversations", json={}).json()
    body = _post(server, {"input": "hi", "conversation": conversation["id"]}).json()
    assert body["conversation"] == {"id": conversation["id"]}
    check_response(body)
    check_events(_stream(server, {"input": "hi", "conversation": {"id": conversation["id"]}}))
