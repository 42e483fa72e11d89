"""The embedded engine end to end on SmolLM2-135M-Instruct (SPEC E1, E3; issue acceptance)."""

from __future__ import annotations

import time
from contextlib import aclosing

import anyio
import pytest

from accord.engine.local import LocalEngine
from accord.engine.local._sequence import Sequence
from accord.engine.protocol import GenerationRequest, Sampling
from accord.events.generation import Chunk, EngineFailed, Finished, GenerationOutput
from tests.engine.conftest import chatml

pytestmark = [pytest.mark.model, pytest.mark.anyio]

GREEDY = Sampling(temperature=0.0)
FRANCE = chatml("What is the capital of France?")
#: The first token of "What is the capital of France?" is a near-tie in float32 arithmetic itself (0.08
#: between "The" and "L"); this wording leads by at least 1.0 on every token of its answer.
NAME_THE_CAPITAL = chatml("Name the capital of France.")


async def run(engine: LocalEngine, request: GenerationRequest) -> list[GenerationOutput]:
    async with aclosing(engine.generate(request)) as stream:
        return [event async for event in stream]


def text_of(events: list[GenerationOutput]) -> str:
    return "".join(e.text for e in events if isinstance(e, Chunk))


def ids_of(events: list[GenerationOutput]) -> list[int]:
    return [i for e in events if isinstance(e, Chunk) for i in e.token_ids]


def finished(events: list[GenerationOutput]) -> Finished:
    last = events[-1]
    assert isinstance(last, Finished), last
    assert all(isinstance(e, Chunk) for e in events[:-1])
    return last


async def test_greedy_answer_to_the_capital_of_france_is_paris(engine: LocalEngine) -> None:
    events = await run(engine, GenerationRequest(prompt=NAME_THE_CAPITAL, max_tokens=32, sampling=GREEDY))
    done = finished(events)
    assert "Paris" in text_of(events)
    assert done.reason == "stop"  # ended on <|im_end|>, whose text is not emitted
    assert "<|im_end|>" not in text_of(events)
    assert done.prompt_tokens == await engine.count_tokens(NAME_THE_CAPITAL)
    # Every sampled token is counted; the end-of-turn token is the one not carried by a chunk.
    assert done.output_tokens == len(ids_of(events)) + 1


async def test_same_tokens_alone_and_batched_with_seven_others(engine: LocalEngine) -> None:
    """Batch invariance: the batch a request shares steps with must not change its tokens."""
    request = GenerationRequest(prompt=FRANCE, max_tokens=24, sampling=GREEDY)
    engine.reset_prefix_cache()
    alone = ids_of(await run(engine, request))
    engine.reset_prefix_cache()
    others = [
        GenerationRequest(
            prompt=chatml(q, system=f"You answer briefly ({i})."), max_tokens=24 + 3 * i, sampling=GREEDY
        )
        for i, q in enumerate(
            [
                "Name a colour.",
                "What is 2+2?",
                "Say hello.",
                "Name a fruit.",
                "What is water?",
                "Count to five.",
                "Why is the sky blue?",
            ]
        )
    ]
    results: dict[int, list[int]] = {}

    async def one(i: int, req: GenerationRequest) -> None:
        results[i] = ids_of(await run(engine, req))

    async with anyio.create_task_group() as tg:
        for i, req in enumerate([request, *others]):
            tg.start_soon(one, i, req)
    assert results[0] == alone
    assert engine.statistics().preemptions == 0


async def test_a_shared_prefix_is_served_from_the_cache_and_answers_sooner(
    engine: LocalEngine, anyio_backend: str
) -> None:
    words = " ".join(f"item{i} is filed under shelf {i % 17} in room {i % 5}." for i in range(400))
    prefix = engine.tokenizer.decode(engine.tokenizer.encode(f"[{anyio_backend}] " + words)[:1000])
    assert len(engine.tokenizer.encode(prefix)) >= 995

    async def timed(question: str) -> tuple[float, Finished]:
        start = time.perf_counter()
        first = None
        events = []
        async for event in engine.generate(
            GenerationRequest(prompt=chatml(prefix + question), max_tokens=2, sampling=GREEDY)
        ):
            first = first or time.perf_counter()
            events.append(event)
        assert first is not None
        return first - start, finished(events)

    engine.reset_prefix_cache()
    cold_ttft, cold = await timed(" Where is item3?")
    warm_ttft, warm = await timed(" Where is item7?")
    assert cold.cached_tokens == 0
    assert warm.cached_tokens >= 960
    assert warm_ttft < cold_ttft
    stats = engine.statistics()
    assert stats.prefix_hit_tokens >= warm.cached_tokens


async def test_closing_the_stream_stops_generation_and_frees_its_blocks(engine: LocalEngine) -> None:
    request = GenerationRequest(prompt=FRANCE, max_tokens=500, sampling=Sampling(temperature=1.0, seed=1))
    async with aclosing(engine.generate(request)) as stream:
        async for event in stream:
            assert isinstance(event, Chunk)
            assert engine.statistics().blocks_in_use > 0
            break
    stats = engine.statistics()
    assert (stats.running, stats.waiting, stats.blocks_in_use) == (0, 0, 0)


async def test_cancelling_the_consumer_frees_its_blocks(engine: LocalEngine) -> None:
    """A consumer that cancels gets nothing more, even with tokens already waiting for it: the loop is
    held up (blocking, as a slow consumer would) while the engine goes on producing."""
    request = GenerationRequest(prompt=FRANCE, max_tokens=500, sampling=Sampling(temperature=1.0, seed=2))
    seen = 0
    with anyio.CancelScope() as scope:
        async for _ in engine.generate(request):
            seen += 1
            time.sleep(0.2)  # noqa: ASYNC251 -- blocks the loop on purpose: tokens arrive meanwhile
            scope.cancel()
    assert seen == 1
    stats = engine.statistics()
    assert (stats.running, stats.blocks_in_use) == (0, 0)


async def test_a_request_the_engine_lets_go_of_without_an_end_fails_rather_than_hangs(
    engine: LocalEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine thread always ends a request before releasing it; if it ever did not, the consumer
    is told with an engine failure (the response ends as failed) instead of waiting for ever."""

    def let_go(seq: Sequence) -> None:
        seq.outbox.release()

    monkeypatch.setattr(engine._core, "submit", let_go)
    with anyio.fail_after(20):
        events = await run(engine, GenerationRequest(prompt=FRANCE, max_tokens=5, sampling=GREEDY))
    assert len(events) == 1 and isinstance(events[0], EngineFailed), events
    assert events[0].failure == "engine_error"


async def test_a_prompt_longer_than_the_context_fails_before_generation(engine: LocalEngine) -> None:
    n = engine.context_length + 5
    events = await run(engine, GenerationRequest(prompt="", prompt_token_ids=(17,) * n))
    assert len(events) == 1
    failure = events[0]
    assert isinstance(failure, EngineFailed)
    assert failure.failure == "context_length_exceeded"
    assert failure.prompt_tokens == n
    assert f"maximum context length is {engine.context_length} tokens" in failure.message
    assert f"resulted in {n} tokens" in failure.message


async def test_the_same_seed_gives_the_same_text(engine: LocalEngine) -> None:
    prompt = chatml("Write one sentence about the sea.")

    async def draw(seed: int) -> list[int]:
        sampling = Sampling(temperature=1.0, top_p=0.95, top_k=50, seed=seed)
        return ids_of(await run(engine, GenerationRequest(prompt=prompt, max_tokens=16, sampling=sampling)))

    first, second, other = await draw(11), await draw(11), await draw(12)
    assert first == second
    assert first != other


async def test_a_stop_string_ends_generation_and_is_not_emitted(engine: LocalEngine) -> None:
    events = await run(
        engine, GenerationRequest(prompt=FRANCE, max_tokens=32, sampling=GREEDY, stop=("Paris",))
    )
    done = finished(events)
    assert done.reason == "stop"
    assert "Paris" not in text_of(events)
    assert text_of(events).startswith("The capital of France is")


async def test_max_tokens_ends_with_length(engine: LocalEngine) -> None:
    events = await run(engine, GenerationRequest(prompt=FRANCE, max_tokens=3, sampling=GREEDY))
    done = finished(events)
    assert (done.reason, done.output_tokens, len(ids_of(events))) == ("length", 3, 3)


def test_the_engine_declares_its_batch(engine: LocalEngine) -> None:
    """What the admission default reads (twice the batch); the session engine is loaded with 16."""
    assert engine.capabilities.max_batch == 16
