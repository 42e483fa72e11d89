"""``/openapi.json`` lists the Chat Completions and Messages operations with their real schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx

from accord.adapters.build import build_app
from tests.serving import scripted_settings, write_script


def _document(tmp: Path) -> dict[str, Any]:
    app = build_app(scripted_settings(write_script(tmp, [{"output": "ok"}]), store="none"))

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            return await client.get("/openapi.json")

    resp = anyio.run(get)
    assert resp.status_code == 200
    document: dict[str, Any] = resp.json()
    return document


def _schema(document: dict[str, Any], ref: dict[str, str]) -> dict[str, Any]:
    schema: dict[str, Any] = document["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]
    return schema


def test_the_new_operations_carry_their_request_and_response_schemas(tmp_path: Path) -> None:
    document = _document(tmp_path)
    paths = document["paths"]
    chat = paths["/v1/chat/completions"]["post"]
    messages = paths["/v1/messages"]["post"]
    count = paths["/v1/messages/count_tokens"]["post"]
    assert [chat["operationId"], messages["operationId"], count["operationId"]] == [
        "createChatCompletion",
        "createMessage",
        "countMessageTokens",
    ]
    chat_request = _schema(document, chat["requestBody"]["content"]["application/json"]["schema"])
    assert {"messages", "tools", "response_format", "stream_options"} <= set(chat_request["properties"])
    messages_request = _schema(document, messages["requestBody"]["content"]["application/json"]["schema"])
    assert {"model", "max_tokens", "messages"} <= set(messages_request["required"])
    assert {"system", "thinking", "stop_sequences", "top_k"} <= set(messages_request["properties"])
    item = messages["responses"]["200"]["content"]["text/event-stream"]["itemSchema"]
    streamed = item["properties"]["data"]["contentSchema"]
    kinds = {r["$ref"].rsplit("/", 1)[1] for r in streamed["anyOf"]}
    assert {"MessageStart", "ContentBlockDelta", "MessageDelta", "MessageStop", "Ping"} <= kinds
    error = messages["responses"]["400"]["content"]["application/json"]["schema"]
    assert _schema(document, error)["properties"]["type"] == {"const": "error"}
    # Types of the same name in two protocols stay two components.
    tools = [name for name in document["components"]["schemas"] if name.endswith("FunctionTool")]
    assert len(tools) == 2
