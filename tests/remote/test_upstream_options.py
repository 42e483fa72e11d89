"""Running accord in front of a real deployment (issue 16, scope 2) against fake vLLM upstreams.

An upstream started with ``--api-key``, one that answers 429 with ``Retry-After``, names
clients see apart from the upstream's own, readiness that follows the upstreams, and
sampling defaults from the model's generation config.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from accord.config import Settings
from accord.engine.protocol import GenerationRequest, Sampling
from accord.engine.remote import RemoteEngine
from accord.engine.upstream import HttpSession, RetryPolicy, SamplingDefaults
from accord.engine.upstream._calls import retry_after
from tests.remote.conftest import Fleet, key_for
from tests.remote.harness import Outcome, collect
from tests.serving import Server, running

REPLY = "Hello from the upstream, how are you?"


def _generate(backend: str, engine: RemoteEngine, request: GenerationRequest) -> Outcome:
    async def main() -> Outcome:
        try:
            return await collect(engine, request)
        finally:
            await engine.aclose()

    result: Outcome = anyio.run(main, backend=backend)
    return result


def test_the_upstream_api_key_goes_with_every_request(fleet: Fleet, backend: str) -> None:
    fake = fleet.fakes[0]
    fake.behaviour.api_key = "sk-upstream"
    engine = RemoteEngine(fleet.urls[:1], http=HttpSession(api_key="sk-upstream"))
    out = _generate(backend, engine, GenerationRequest(prompt="hi"))
    assert out.text == REPLY and fake.unauthorised == 0
    assert fake.seen[-1].headers["authorization"] == "Bearer sk-upstream"


def test_without_the_key_an_upstream_that_wants_one_is_not_ready(fleet: Fleet, backend: str) -> None:
    fleet.fakes[0].behaviour.api_key = "sk-upstream"
    engine = RemoteEngine(fleet.urls[:1])

    async def main() -> dict[str, Any]:
        try:
            return await engine.readiness()
        finally:
            await engine.aclose()

    report = anyio.run(main, backend=backend)
    assert report["ready"] is False and fleet.fakes[0].unauthorised >= 1


def test_retry_after_holds_the_upstream_back_for_the_time_it_names(fleet: Fleet, backend: str) -> None:
    """One upstream answers 429 with Retry-After: 1; the retry goes no sooner than a second later."""
    fake = fleet.fakes[0]
    fake.behaviour.fail_next = [429]
    fake.behaviour.retry_after = "1"
    engine = RemoteEngine(fleet.urls[:1])
    engine.pool.backoff = (0.01, 0.05)  # far below the upstream's own ask
    out = _generate(backend, engine, GenerationRequest(prompt="hi"))
    assert out.text == REPLY
    completions = [s for s in fake.seen if s.path == "/v1/completions"]
    assert len(completions) == 2
    assert completions[1].started_at - completions[0].started_at >= 0.95


def test_a_retry_after_longer_than_the_policy_allows_fails_now(fleet: Fleet, backend: str) -> None:
    fake = fleet.fakes[0]
    fake.behaviour.fail_next = [503]
    fake.behaviour.retry_after = "120"
    engine = RemoteEngine(fleet.urls[:1], retry=RetryPolicy(max_retry_after=5.0))
    out = _generate(backend, engine, GenerationRequest(prompt="hi"))
    assert out.failed is not None and out.failed.failure == "upstream_error"
    assert len([s for s in fake.seen if s.path == "/v1/completions"]) == 1


def test_retry_after_moves_the_request_to_another_upstream_at_once(fleet: Fleet) -> None:
    first, second = fleet.fakes[0], fleet.fakes[1]
    first.behaviour.fail_next = [429]
    first.behaviour.retry_after = "60"
    engine = RemoteEngine(fleet.urls[:2])
    key = key_for(engine.pool, fleet.urls[0])  # the first attempt goes to the upstream that refuses
    out = _generate("asyncio", engine, GenerationRequest(prompt="hi", cache_key=key))
    assert out.text == REPLY
    assert [s.path for s in first.seen] == ["/v1/completions"]
    assert [s.path for s in second.seen] == ["/v1/completions"]
    assert second.seen[0].started_at - first.seen[0].started_at < 5.0
    assert engine.pool.upstreams[0].held_until > 0


def test_generation_config_sampling_applies_where_the_request_sets_none(fleet: Fleet, backend: str) -> None:
    engine = RemoteEngine(fleet.urls[:1], sampling=SamplingDefaults(temperature=0.6, top_p=0.95, top_k=20))

    async def main() -> None:
        try:
            await collect(engine, GenerationRequest(prompt="hi"))
            await collect(engine, GenerationRequest(prompt="hi", sampling=Sampling(temperature=0.0)))
        finally:
            await engine.aclose()

    anyio.run(main, backend=backend)
    defaulted, own = fleet.fakes[0].seen[-2].body, fleet.fakes[0].seen[-1].body
    assert (defaulted["temperature"], defaulted["top_p"], defaulted["top_k"]) == (0.6, 0.95, 20)
    assert (own["temperature"], own["top_p"], own["top_k"]) == (0.0, 0.95, 20)


@pytest.fixture
def aliased(fleet: Fleet, tmp_path: Path) -> Iterator[Server]:
    settings = Settings(
        upstream=fleet.urls[:1],
        served_model_name=["qwen3", "default"],
        chat_template="plain",  # type: ignore[arg-type]
        upstream_api_key="sk-upstream",
        data_dir=tmp_path / "data",
        reasoning_parser="none",
        tool_parser="none",
        shutdown_grace=1.0,
    )
    fleet.fakes[0].behaviour.api_key = "sk-upstream"
    with running(settings) as server:
        yield server


def test_served_names_are_what_clients_see_and_the_upstream_gets_its_own(
    aliased: Server, fleet: Fleet
) -> None:
    listed = httpx.get(aliased.v1 + "/models", timeout=10).json()
    assert [m["id"] for m in listed["data"]] == ["qwen3", "default"]
    answer = httpx.post(
        aliased.v1 + "/responses", json={"model": "default", "input": "hi"}, timeout=30
    ).json()
    assert answer["status"] == "completed" and answer["model"] == "default"
    assert fleet.fakes[0].seen[-1].body["model"] == "fake-model"


def test_ready_follows_the_upstreams_and_health_stays_liveness(aliased: Server, fleet: Fleet) -> None:
    ready = httpx.get(aliased.base_url + "/ready", timeout=10)
    assert ready.status_code == 200 and ready.json()["ready"] is True
    fleet.fakes[0].behaviour.healthy = False
    not_ready = httpx.get(aliased.base_url + "/ready", timeout=10)
    assert not_ready.status_code == 503 and not_ready.json()["status"] == "not_ready"
    assert not_ready.json()["upstreams"][0]["state"] == "down"
    assert httpx.get(aliased.base_url + "/health", timeout=10).status_code == 200
    fleet.fakes[0].behaviour.healthy = True
    assert httpx.get(aliased.base_url + "/ready", timeout=10).status_code == 200


@pytest.mark.parametrize(
    ("status", "header", "expected"),
    [(429, "7", 7.0), (503, "0", 0.0), (500, "7", None), (429, "soon", None), (429, None, None)],
)
def test_retry_after_is_read_on_429_and_503_only(
    status: int, header: str | None, expected: float | None
) -> None:
    headers = {"retry-after": header} if header is not None else {}
    assert retry_after(httpx.Response(status, headers=headers)) == expected


def test_retry_after_as_an_http_date_is_the_time_until_then() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    wait = retry_after(httpx.Response(503, headers={"retry-after": when}))
    assert wait is not None and 25.0 < wait <= 30.0
