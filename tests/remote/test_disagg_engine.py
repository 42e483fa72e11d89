"""The prefill/decode split against fake vLLM workers: the handoff, usage, failures, retries."""

from __future__ import annotations

from contextlib import aclosing

import anyio
import pytest

from accord.engine.disagg import DisaggEngine
from accord.engine.protocol import GenerationRequest
from accord.events.generation import GenerationOutput
from tests.remote.conftest import Fleet
from tests.remote.harness import Outcome, collect, wait_until

REPLY = "Hello from the upstream, how are you?"


def _engine(split: Fleet, prefill: int = 1, decode: int = 1) -> DisaggEngine:
    urls = split.urls
    engine = DisaggEngine(urls[:prefill], urls[2 : 2 + decode])
    for pool in engine.pools():
        pool.backoff = (0.05, 0.2)
    return engine


def _run(backend: str, engine: DisaggEngine, *requests: GenerationRequest) -> list[Outcome]:
    async def main() -> list[Outcome]:
        try:
            return [await collect(engine, r) for r in requests]
        finally:
            await engine.aclose()

    result: list[Outcome] = anyio.run(main, backend=backend)
    return result


def test_the_prefill_hands_its_kv_parameters_to_the_decode(split: Fleet, backend: str) -> None:
    """vLLM's protocol: max_tokens 1 + do_remote_decode, then the returned parameters, verbatim."""
    prefill, decode = split.fakes[0], split.fakes[2]
    (out,) = _run(backend, _engine(split), GenerationRequest(prompt="a question", request_id="resp_1"))
    assert out.text == REPLY and out.finished is not None
    (context,) = prefill.seen
    assert context.body["max_tokens"] == 1 and context.body["stream"] is False
    assert "stream_options" not in context.body
    assert context.body["kv_transfer_params"]["do_remote_decode"] is True
    assert context.body["kv_transfer_params"]["do_remote_prefill"] is False
    (generation,) = decode.seen
    assert generation.body["kv_transfer_params"]["do_remote_prefill"] is True
    assert generation.body["kv_transfer_params"]["remote_engine_id"] == "engine-p0"
    assert generation.body["stream"] is True and generation.body["prompt"] == context.body["prompt"]
    assert context.headers["x-request-id"] == generation.headers["x-request-id"] == "resp_1"
    assert [p["ok"] for p in prefill.registry.pulled] == [True]


def test_cached_tokens_come_from_the_context_phase(split: Fleet) -> None:
    """The decode worker reports the whole transferred prompt as cached; only the prefill knows."""
    first = "system: terse. user: what is the capital of France and why"
    second = first + " assistant: Paris. user: and of Italy"
    cold, warm = _run(
        "asyncio", _engine(split), GenerationRequest(prompt=first), GenerationRequest(prompt=second)
    )
    assert cold.finished is not None and warm.finished is not None
    assert cold.finished.cached_tokens == 0
    assert 0 < warm.finished.cached_tokens < warm.finished.prompt_tokens
    assert cold.finished.output_tokens == len(cold.token_ids) > 0


def test_an_over_length_prompt_fails_in_the_context_phase_and_never_reaches_decode(split: Fleet) -> None:
    split.fakes[0].behaviour.max_model_len = 4
    (out,) = _run(
        "asyncio", _engine(split), GenerationRequest(prompt="far too long a prompt for this worker")
    )
    assert out.failed is not None and out.failed.failure == "context_length_exceeded"
    assert "maximum model length of 4" in out.failed.message
    assert split.fakes[2].seen == []


def test_a_context_phase_that_already_finished_is_the_answer(split: Fleet) -> None:
    """Its one token was EOS: no handoff, no generation phase (a decode call would wait forever)."""
    split.fakes[0].behaviour.prefill_finishes = True
    (out,) = _run("asyncio", _engine(split), GenerationRequest(prompt="say nothing"))
    assert out.finished is not None and out.finished.reason == "stop" and out.text == "Hello"
    assert split.fakes[2].seen == []


def test_a_refused_decode_connection_is_retried_with_the_same_handoff(split: Fleet) -> None:
    split.served[2].stop()
    (out,) = _run("asyncio", _engine(split, decode=2), GenerationRequest(prompt="hi"))
    assert out.text == REPLY
    assert len(split.fakes[3].seen) == 1 and [p["ok"] for p in split.fakes[3].registry.pulled] == [True]


def test_a_failing_prefill_worker_is_retried_on_another(split: Fleet) -> None:
    for fake in split.fakes[:2]:
        fake.behaviour.fail_next = [503]
    (out,) = _run("asyncio", _engine(split, prefill=2), GenerationRequest(prompt="hi"))
    assert out.text == REPLY
    assert sum(len(f.seen) for f in split.fakes[:2]) == 3  # one 503, then both once more at most


def test_a_decode_failure_after_delivery_is_not_retried(split: Fleet) -> None:
    """A decode worker that got the request may have pulled the blocks: no second decode."""
    split.fakes[2].behaviour.fail_next = [500]
    split.fakes[3].behaviour.fail_next = [500]
    (out,) = _run("asyncio", _engine(split, decode=2), GenerationRequest(prompt="hi"))
    assert out.failed is not None and out.failed.failure == "upstream_error"
    assert sum(len(f.seen) for f in split.fakes[2:]) == 1


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_going_away_cancels_the_phase_that_is_running(split: Fleet, backend: str, phase: str) -> None:
    fake = split.fakes[0] if phase == "prefill" else split.fakes[2]
    split.fakes[0].behaviour.first_token_delay = 3.0 if phase == "prefill" else 0.0
    split.fakes[2].behaviour.token_delay = 0.2
    engine = _engine(split)

    async def main() -> list[GenerationOutput]:
        got: list[GenerationOutput] = []

        async def consume() -> None:
            async with aclosing(engine.generate(GenerationRequest(prompt="hi"))) as events:
                async for event in events:
                    got.append(event)

        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            # The client leaves once the phase under test is working on the request (the fake runs
            # in another thread, so it is polled there), not after a fixed time a loaded machine may miss.
            assert await anyio.to_thread.run_sync(wait_until, lambda: bool(fake.seen), 20.0)
            group.cancel_scope.cancel()
        await engine.aclose()
        return got

    anyio.run(main, backend=backend)
    assert wait_until(lambda: fake.seen[-1].disconnected, 10.0)
    if phase == "prefill":
        assert split.fakes[2].seen == []
