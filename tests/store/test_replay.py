"""GET ?stream=true replays exactly what the client received (SPEC S2, W4; issue 5 acceptance)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from accord.adapters.http.exchange import sse_frame
from accord.adapters.store import replay
from tests.serving import Server, parse_sse, running, scripted_settings, write_script
from tests.store.records import run_record, service

RULES: list[dict[str, Any]] = [
    {
        "when": {"last_input": "^fail"},
        "output": "partial answer",
        "chunk_chars": 3,
        "fail": {"after_chunks": 2},
    },
    {"when": {"last_input": "^endless"}, "output": "tick " * 400, "chunk_chars": 5, "chunk_delay_s": 0.01},
    {"when": {"last_input": "^slow"}, "output": "a b c d e f", "chunk_chars": 2, "chunk_delay_s": 0.06},
    {"output": "<think>Plan.</think>Here is the answer.", "chunk_chars": 4},
]


@pytest.fixture
def server(tmp_path: Path, worker_class: str) -> Iterator[Server]:
    settings = scripted_settings(
        write_script(tmp_path, RULES),
        worker_class=worker_class,
        keepalive_interval=0.025,
        reasoning_parser="qwen3",
    )
    with running(settings) as srv:
        yield srv


@pytest.mark.anyio
async def test_replay_reprojects_the_log_with_keepalives_in_place(tmp_path: Path) -> None:
    """The pure part: projecting the stored log again, keepalives re-inserted, gives the frames sent live."""
    svc = service(tmp_path, keepalive_interval=0.01)
    record, _, sent = await run_record(svc, {"input": "slow"})
    assert record.keepalive_seqs, "the slow rule leaves silences the keepalive fills"
    replayed = replay(record.decoded_events(), record.keepalive_seqs)
    assert [sse_frame(e) for e in replayed] == [sse_frame(e) for e in sent]


def test_a_replay_is_the_same_bytes_keepalives_included(server: Server) -> None:
    raw = httpx.post(server.v1 + "/responses", json={"input": "slow", "stream": True}, timeout=20).content
    events = parse_sse(raw)
    assert any(e["type"] == "response.in_progress" for e in events[2:]), "keepalives went out"
    response_id = events[0]["response"]["id"]
    assert httpx.get(server.v1 + f"/responses/{response_id}", params={"stream": "true"}).content == raw
    tail = httpx.get(server.v1 + f"/responses/{response_id}", params={"stream": "true", "starting_after": 4})
    assert parse_sse(tail.content) == events[5:]


def test_the_sdk_resumes_a_stream_from_a_sequence_number(server: Server) -> None:
    c = openai.OpenAI(base_url=server.v1, api_key="unused", max_retries=0)
    events = list(c.responses.create(model="m", input="hi", stream=True))
    response_id = events[0].response.id  # type: ignore[union-attr]
    resumed = list(c.responses.retrieve(response_id, stream=True, starting_after=3))
    assert [e.model_dump() for e in resumed] == [e.model_dump() for e in events[4:]]
    with c.responses.stream(response_id=response_id, starting_after=2) as helper:
        seen = [e.sequence_number for e in helper]
        final = helper.get_final_response()
    assert seen[0] == 3 and final.output_text == "Here is the answer."


def test_a_failed_response_is_stored_and_replayed_as_it_ended(server: Server) -> None:
    raw = httpx.post(server.v1 + "/responses", json={"input": "fail", "stream": True}).content
    events = parse_sse(raw)
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    response_id = events[0]["response"]["id"]
    assert httpx.get(server.v1 + f"/responses/{response_id}", params={"stream": "true"}).content == raw
    assert httpx.get(server.v1 + f"/responses/{response_id}").json()["status"] == "failed"


def test_a_disconnected_response_is_kept_as_cancelled(server: Server) -> None:
    """W10: the client went away; what was generated stays readable, closed as cancelled."""
    with httpx.stream("POST", server.v1 + "/responses", json={"input": "endless", "stream": True}) as resp:
        lines = resp.iter_lines()
        first = next(line for line in lines if line.startswith("data: "))
        for line in lines:
            if "_text.delta" in line:
                break
    response_id = json.loads(first[len("data: ") :])["response"]["id"]
    for _ in range(200):
        got = httpx.get(server.v1 + f"/responses/{response_id}")
        if got.status_code == 200:
            break
        httpx.get(server.base_url + "/health")  # the server writes it once it has noticed
    body = got.json()
    assert body["status"] == "cancelled"
    assert body["output"][-1]["status"] == "incomplete" and body["output"][-1]["content"][0]["text"]
    replayed = parse_sse(
        httpx.get(server.v1 + f"/responses/{response_id}", params={"stream": "true"}).content
    )
    assert replayed[-1]["type"] == "response.cancelled"
    assert [e["sequence_number"] for e in replayed] == list(range(len(replayed)))
