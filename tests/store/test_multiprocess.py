"""Two accord processes on one store (SQLite file, PostgreSQL), and a kill -9 (issue 5 acceptance)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.serving import parse_sse, write_script
from tests.store.processes import Accord

pytestmark = pytest.mark.slow

RULES: list[dict[str, Any]] = [
    {"when": {"last_input": "^slow"}, "output": "tick " * 400, "chunk_chars": 5, "chunk_delay_s": 0.02},
    {"output": "Stored answer, from whichever process.", "chunk_chars": 6},
]
CONVERSATIONS = 200


@pytest.fixture
def pair(tmp_path: Path, store_url: str) -> Iterator[tuple[Accord, Accord]]:
    """Two processes, one on each worker class, sharing the store and the data directory."""
    script = write_script(tmp_path, RULES)
    a = Accord(script, store_url, tmp_path / "data", worker_class="asyncio")
    try:
        b = Accord(script, store_url, tmp_path / "data", worker_class="trio")
    except BaseException:
        a.stop()
        raise
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


def test_a_response_is_readable_on_the_other_process_once_its_end_was_seen(
    pair: tuple[Accord, Accord],
) -> None:
    """S3 read-your-writes: continue on B the moment A's response.completed arrives, before A's EOF."""
    a, b = pair
    with httpx.stream("POST", a.v1 + "/responses", json={"input": "hi", "stream": True}) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: ") and '"response.completed"' in line:
                done = json.loads(line[len("data: ") :])["response"]
                follow = httpx.post(
                    b.v1 + "/responses", json={"input": "more", "previous_response_id": done["id"]}
                )
                assert follow.status_code == 200, follow.text
                assert httpx.get(b.v1 + f"/responses/{done['id']}").json() == done
                break
    plain = httpx.post(a.v1 + "/responses", json={"input": "hi"}).json()
    assert httpx.get(b.v1 + f"/responses/{plain['id']}").json() == plain
    assert httpx.post(
        b.v1 + "/responses", json={"input": "x", "previous_response_id": plain["id"]}
    ).is_success


def test_two_hundred_concurrent_conversations_lose_nothing(pair: tuple[Accord, Accord]) -> None:
    """Turn one on one process, turn two on the other, all at once; then every response is read back
    from both and every continuation is checked to have seen exactly its own first turn."""
    a, b = pair
    # Threads with one shared sync client: the client side stays cheap, the servers see 200 at once.
    client = httpx.Client(limits=httpx.Limits(max_connections=2 * CONVERSATIONS), timeout=60)

    def conversation(n: int) -> tuple[dict[str, Any], dict[str, Any]]:
        first, second = (a, b) if n % 2 else (b, a)
        one = client.post(first.v1 + "/responses", json={"input": f"conversation {n}"})
        one.raise_for_status()
        two = client.post(
            second.v1 + "/responses",
            json={"input": f"follow-up {n}", "previous_response_id": one.json()["id"]},
        )
        two.raise_for_status()
        return one.json(), two.json()

    def check(n: int, one: dict[str, Any], two: dict[str, Any]) -> None:
        for server in (a, b):
            for body in (one, two):
                assert client.get(server.v1 + f"/responses/{body['id']}").json() == body
        items = client.get(a.v1 + f"/responses/{two['id']}/input_items").json()["data"]
        assert [item["content"][0]["text"] for item in items] == [f"follow-up {n}"]
        # The continuation's prompt held exactly this conversation's first turn and nothing else.
        explicit = [
            {"role": "user", "content": f"conversation {n}"},
            *one["output"],
            {"role": "user", "content": f"follow-up {n}"},
        ]
        counted = client.post(b.v1 + "/responses/input_tokens", json={"input": explicit})
        assert counted.json()["input_tokens"] == two["usage"]["input_tokens"]

    with client, ThreadPoolExecutor(CONVERSATIONS) as pool:
        results = list(pool.map(conversation, range(CONVERSATIONS)))
        assert len({two["id"] for _, two in results}) == CONVERSATIONS
        assert [two["previous_response_id"] for _, two in results] == [one["id"] for one, _ in results]
        list(pool.map(check, range(CONVERSATIONS), *zip(*results, strict=True)))


def test_a_background_response_is_followed_and_cancelled_from_the_other_process(
    pair: tuple[Accord, Accord],
) -> None:
    """S4 across processes: B sees A's run, its cancel reaches A through the store, its replay is A's."""
    a, b = pair
    started = httpx.post(a.v1 + "/responses", json={"input": "slow", "background": True}).json()
    assert httpx.get(b.v1 + f"/responses/{started['id']}").json()["status"] in ("queued", "in_progress")
    cancelled = httpx.post(b.v1 + f"/responses/{started['id']}/cancel", timeout=30).json()
    assert cancelled["status"] == "cancelled"
    replay = {"stream": "true"}
    from_b = httpx.get(b.v1 + f"/responses/{started['id']}", params=replay).content
    assert from_b == httpx.get(a.v1 + f"/responses/{started['id']}", params=replay).content
    assert parse_sse(from_b)[-1]["type"] == "response.cancelled"
    quick = httpx.post(a.v1 + "/responses", json={"input": "hi", "background": True}).json()
    followed = parse_sse(httpx.get(b.v1 + f"/responses/{quick['id']}", params=replay, timeout=30).content)
    assert followed[-1]["type"] == "response.completed"


def test_kill_9_mid_stream_leaves_finished_responses_whole_and_no_half_one(
    tmp_path: Path, store_url: str
) -> None:
    script = write_script(tmp_path, RULES)
    a = Accord(script, store_url, tmp_path / "data")
    try:
        finished = [httpx.post(a.v1 + "/responses", json={"input": f"q{n}"}).json() for n in range(3)]
        with httpx.stream("POST", a.v1 + "/responses", json={"input": "slow", "stream": True}) as resp:
            seen: list[str] = []
            for line in resp.iter_lines():
                if line.startswith("data: "):
                    seen.append(line)
                if len(seen) >= 12:
                    a.kill()
                    break
        interrupted = parse_sse(f"event: response.created\n{seen[0]}\n\n".encode())[0]["response"]["id"]
    finally:
        a.stop()
    again = Accord(script, store_url, tmp_path / "data", worker_class="trio")
    try:
        for body in finished:
            assert httpx.get(again.v1 + f"/responses/{body['id']}").json() == body
        assert httpx.get(again.v1 + f"/responses/{interrupted}").status_code == 404
        follow = httpx.post(
            again.v1 + "/responses", json={"input": "next", "previous_response_id": finished[-1]["id"]}
        )
        assert follow.status_code == 200
    finally:
        again.stop()
