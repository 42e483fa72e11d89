"""``/v1/conversations`` and ``conversation`` on ``/v1/responses`` through the openai SDK (issue 15)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.serving import running, scripted_settings, write_script

RULES: list[dict[str, Any]] = [{"output": "Noted.", "chunk_chars": 2}]


@pytest.fixture
def server(tmp_path: Path, worker_class: str) -> Any:
    with running(scripted_settings(write_script(tmp_path, RULES), worker_class=worker_class)) as srv:
        yield srv


def client(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.v1, api_key="unused", max_retries=0, timeout=20)


def test_crud_and_paging(server: Any) -> None:
    c = client(server)
    conv = c.conversations.create(
        items=[{"type": "message", "role": "user", "content": f"m{i}"} for i in range(5)],
        metadata={"topic": "a"},
    )
    assert conv.id.startswith("conv_") and conv.metadata == {"topic": "a"}
    assert c.conversations.retrieve(conv.id).metadata == {"topic": "a"}
    assert c.conversations.update(conv.id, metadata={"topic": "b"}).metadata == {"topic": "b"}
    page = c.conversations.items.list(conv.id, limit=2, order="asc")
    assert [item.content[0].text for item in page.data] == ["m0", "m1"]  # type: ignore[union-attr]
    assert page.has_more
    every = [item.content[0].text for item in c.conversations.items.list(conv.id, limit=2, order="asc")]  # type: ignore[union-attr]
    assert every == [f"m{i}" for i in range(5)]
    newest = c.conversations.items.list(conv.id, limit=1)
    assert newest.data[0].content[0].text == "m4"  # type: ignore[union-attr]
    added = c.conversations.items.create(
        conv.id, items=[{"type": "message", "role": "assistant", "content": "reply"}]
    )
    [item] = added.data
    assert item.type == "message" and item.role == "assistant" and item.id.startswith("msg_")  # type: ignore[union-attr]
    got = c.conversations.items.retrieve(item.id, conversation_id=conv.id)  # type: ignore[union-attr]
    assert got.content[0].text == "reply"  # type: ignore[union-attr]
    assert c.conversations.items.delete(item.id, conversation_id=conv.id).id == conv.id  # type: ignore[union-attr]
    with pytest.raises(openai.NotFoundError):
        c.conversations.items.retrieve(item.id, conversation_id=conv.id)  # type: ignore[union-attr]
    assert c.conversations.delete(conv.id).deleted
    with pytest.raises(openai.NotFoundError):
        c.conversations.retrieve(conv.id)


def test_bad_requests_are_clean_400s(server: Any) -> None:
    conv = httpx.post(server.v1 + "/conversations", json={}).json()
    url = f"{server.v1}/conversations/{conv['id']}"
    cases = [
        (url + "/items", {"items": [{"type": "nonsense"}]}, "items[0].type"),
        (url + "/items", {"items": [{"role": "user", "content": "x"}] * 21}, "items"),
        (url, {"metadata": {"k": "v" * 513}}, "metadata.k"),
        (url, {"metadata": {"k": 3}}, "metadata"),
    ]
    for target, body, param in cases:
        r = httpx.post(target, json=body)
        assert r.status_code == 400, (body, r.text)
        assert r.json()["error"]["param"] == param
    r = httpx.get(url + "/items", params={"after": "msg_nope"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "after"
    assert httpx.get(server.v1 + "/conversations/conv_nope/items").status_code == 404


def test_responses_read_and_append_the_conversation(server: Any) -> None:
    c = client(server)
    conv = c.conversations.create(items=[{"type": "message", "role": "user", "content": "my name is Ada"}])
    alone = c.responses.create(model="m", input="what is my name?")
    first = c.responses.create(model="m", input="what is my name?", conversation=conv.id)
    assert first.conversation is not None and first.conversation.id == conv.id
    assert first.usage is not None and alone.usage is not None
    assert first.usage.input_tokens > alone.usage.input_tokens
    items = list(c.conversations.items.list(conv.id, order="asc"))
    assert [(i.type, getattr(i, "role", None)) for i in items] == [
        ("message", "user"),
        ("message", "user"),
        ("message", "assistant"),
    ]
    assert items[2].id == first.output[0].id
    # The second turn streams and names the conversation as an object.
    with c.responses.stream(model="m", input="again", conversation={"id": conv.id}) as stream:
        for _ in stream:
            pass
        second = stream.get_final_response()
    assert second.conversation is not None and second.conversation.id == conv.id
    assert second.usage is not None and second.usage.input_tokens > first.usage.input_tokens
    assert len(list(c.conversations.items.list(conv.id))) == 5


def test_unknown_conversation_and_previous_response_id(server: Any) -> None:
    c = client(server)
    with pytest.raises(openai.NotFoundError) as missing:
        c.responses.create(model="m", input="hi", conversation="conv_doesnotexist")
    assert missing.value.body["param"] == "conversation"  # type: ignore[index]
    conv = c.conversations.create()
    first = c.responses.create(model="m", input="hi")
    with pytest.raises(openai.BadRequestError) as both:
        c.responses.create(model="m", input="hi", conversation=conv.id, previous_response_id=first.id)
    assert both.value.body["param"] == "previous_response_id"  # type: ignore[index]
