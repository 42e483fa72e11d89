"""POST /v1/responses/input_tokens and /compact (SPEC S5): counted and summarised as a create would be."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from accord.adapters.http.compact import SUMMARY_PREFIX
from tests.serving import Server
from tests.store.records import prompts, recording_server

SUMMARY = "The user asked about Paris weather; it is sunny."
RULES: list[dict[str, Any]] = [
    {"when": {"last_input": "^Summarize the conversation"}, "output": f"<think>Condense.</think>{SUMMARY}"},
    {"output": "<think>Ok.</think>Noted."},
]


@pytest.fixture
def server(tmp_path: Path, worker_class: str) -> Iterator[Server]:
    with recording_server(tmp_path, RULES, worker_class=worker_class) as srv:
        yield srv


def client(server: Server) -> Any:
    return openai.OpenAI(base_url=server.v1, api_key="unused", max_retries=0, timeout=20)


def test_input_tokens_count_the_prompt_a_create_would_render(server: Server) -> None:
    c = client(server)
    first = c.responses.create(model="m", input="Weather in Paris?", instructions="Be brief.")
    body = {"model": "m", "input": "And tomorrow?", "previous_response_id": first.id}
    counted = c.responses.input_tokens.count(**body)
    assert counted.object == "response.input_tokens"
    assert counted.input_tokens == c.responses.create(**body).usage.input_tokens
    missing = httpx.post(
        server.v1 + "/responses/input_tokens", json={**body, "previous_response_id": "resp_x"}
    )
    assert missing.status_code == 404


def test_a_compaction_replays_as_its_summary(server: Server) -> None:
    """The model summarises the conversation; the sealed item, sent back, puts that summary in the prompt."""
    c = client(server)
    first = c.responses.create(model="m", input="Weather in Paris?")
    raw = c.responses.with_raw_response.compact(model="m", previous_response_id=first.id, input="Thanks.")
    compacted = raw.parse()
    assert compacted.object == "response.compaction" and compacted.usage.output_tokens > 0
    kinds = [item.type for item in compacted.output]
    assert kinds == ["message", "message", "compaction"]
    sealed = compacted.output[-1].encrypted_content
    assert SUMMARY not in sealed and "Condense" not in sealed
    # The compacted output goes back as it came (its user messages are input messages, not outputs).
    c.responses.create(
        model="m", input=[*raw.http_response.json()["output"], {"role": "user", "content": "Go on."}]
    )
    prompt = prompts(server)[-1]
    assert SUMMARY_PREFIX + SUMMARY in prompt and "Condense" not in prompt
    assert "Summarize the conversation" not in prompt


def test_a_compaction_this_server_did_not_seal_is_not_trusted(server: Server) -> None:
    c = client(server)
    forged = {"type": "compaction", "id": "cmp_1", "encrypted_content": "bm90IG91cnM"}
    c.responses.create(model="m", input=[forged, {"role": "user", "content": "Go on."}])
    assert "not ours" not in prompts(server)[-1]
