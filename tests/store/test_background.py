"""background: true — polled, streamed while it runs, cancelled (SPEC S4)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import openai
import pytest

from tests.serving import Server, parse_sse, running, scripted_settings, write_script

RULES: list[dict[str, Any]] = [
    {"when": {"last_input": "^endless"}, "output": "tick " * 2000, "chunk_chars": 5, "chunk_delay_s": 0.01},
    {
        "when": {"last_input": "^slow"},
        "output": "one two three four",
        "chunk_chars": 4,
        "chunk_delay_s": 0.05,
    },
    {"output": "quick answer"},
]


@pytest.fixture
def server(tmp_path: Path, worker_class: str) -> Iterator[Server]:
    with running(scripted_settings(write_script(tmp_path, RULES), worker_class=worker_class)) as srv:
        yield srv


def client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.v1, api_key="unused", max_retries=0, timeout=20)


def poll(c: openai.OpenAI, response_id: str, deadline_s: float = 15.0) -> Any:
    """Poll as a client would, until the response has finished."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        response = c.responses.retrieve(response_id)
        if response.status not in ("queued", "in_progress"):
            return response
        time.sleep(0.05)
    raise AssertionError(f"{response_id} did not finish")


def test_a_background_response_answers_at_once_and_is_polled_to_the_end(server: Server) -> None:
    c = client(server)
    started = c.responses.create(model="m", input="slow", background=True)
    assert started.status == "queued" and started.background is True and started.output == []
    done = poll(c, started.id)
    assert done.status == "completed" and done.output_text == "one two three four"
    running_one = c.responses.create(model="m", input="endless", background=True)
    with pytest.raises(openai.BadRequestError):
        c.responses.create(model="m", input="more", previous_response_id=running_one.id)
    c.responses.cancel(running_one.id)


def test_streaming_a_running_response_from_any_point(server: Server) -> None:
    """GET ?stream=true follows the live run; late and resumed readers get the same numbered events."""
    c = client(server)
    started = c.responses.create(model="m", input="slow", background=True)
    live = httpx.get(server.v1 + f"/responses/{started.id}", params={"stream": "true"}, timeout=20).content
    events = parse_sse(live)
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    resumed = httpx.get(
        server.v1 + f"/responses/{started.id}", params={"stream": "true", "starting_after": 3}
    )
    assert parse_sse(resumed.content) == events[4:]
    assert httpx.get(server.v1 + f"/responses/{started.id}", params={"stream": "true"}).content == live


def test_leaving_a_background_stream_does_not_stop_it(server: Server) -> None:
    c = client(server)
    stream = c.responses.create(model="m", input="slow", background=True, stream=True)
    first = next(iter(stream))
    stream.close()
    response_id = first.response.id  # type: ignore[union-attr]
    assert poll(c, response_id).output_text == "one two three four"


def test_cancel_ends_a_running_response_as_cancelled(server: Server) -> None:
    c = client(server)
    started = c.responses.create(model="m", input="endless", background=True)
    cancelled = c.responses.cancel(started.id)
    assert cancelled.status == "cancelled"
    assert c.responses.retrieve(started.id).status == "cancelled"
    replayed = parse_sse(httpx.get(server.v1 + f"/responses/{started.id}", params={"stream": "true"}).content)
    assert replayed[-1]["type"] == "response.cancelled"
    assert c.responses.cancel(started.id).status == "cancelled"  # idempotent once final


def test_a_cancel_flag_in_the_store_reaches_the_run(server: Server) -> None:
    """How a cancel sent to another process arrives: the flag in the store, seen by the running one."""
    c = client(server)
    started = c.responses.create(model="m", input="endless", background=True)
    store = server.app.service.store
    assert store is not None
    assert anyio.run(store.request_cancel, started.id)
    assert poll(c, started.id).status == "cancelled"


def test_only_background_and_stored_responses_qualify(server: Server) -> None:
    c = client(server)
    plain = c.responses.create(model="m", input="hi")
    with pytest.raises(openai.BadRequestError):
        c.responses.cancel(plain.id)
    with pytest.raises(openai.BadRequestError) as info:
        c.responses.create(model="m", input="hi", background=True, store=False)
    assert info.value.param == "store"
