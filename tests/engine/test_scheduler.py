"""Continuous batching decisions, without a model: chunking, admission, growth, preemption."""

from __future__ import annotations

from accord.engine.local._blocks import BlockPool, NativeCache
from accord.engine.local._outbox import Outbox
from accord.engine.local._scheduler import Scheduler, Work
from accord.engine.local._sequence import Phase, Sequence, StopMatcher
from accord.engine.local._tokenizer import Detokenizer
from accord.kernels.noise import SamplingRow

BLOCK = 4


def make(num_blocks: int, chunk: int = 8, max_batch: int = 4) -> Scheduler:
    cache = NativeCache(1, 1, 2, num_blocks, BLOCK)
    return Scheduler(BlockPool(num_blocks, BLOCK), cache, max_batch=max_batch, chunk_tokens=chunk)


def seq(tokens: list[int], max_new: int = 100) -> Sequence:
    return Sequence(
        request_id="r",
        prompt_len=len(tokens),
        tokens=list(tokens),
        max_new=max_new,
        sampling=SamplingRow(temperature=0.0),
        stop_ids=frozenset(),
        detokenizer=Detokenizer([b"x"] * 100),
        stops=StopMatcher(()),
        outbox=Outbox(),
    )


def step(s: Scheduler, token: int = 1) -> list[Work]:
    """One scheduling round as the engine does it: advance, then sample for the finishing rows."""
    work = s.schedule()
    s.advance(work)
    for w in work:
        if w.samples:
            w.seq.accept(token)
    return work


def test_a_long_prompt_is_cut_into_chunks_from_where_its_cache_ends() -> None:
    s = make(16, chunk=8)
    a = seq(list(range(20)))
    s.add(a)
    assert [(w.start, w.length) for w in step(s)] == [(0, 8)]
    assert [(w.start, w.length) for w in step(s)] == [(8, 8)]
    assert [(w.start, w.length, w.samples) for w in step(s)] == [(16, 4, True)]
    assert a.decoding and [(w.start, w.length) for w in step(s)] == [(20, 1)]


def test_decode_rows_ride_along_with_a_new_prompt() -> None:
    s = make(16, chunk=8)
    a, b = seq([1, 2, 3]), seq([4, 5, 6, 7, 8])
    s.add(a)
    step(s)
    s.add(b)
    work = step(s)
    assert [(w.seq, w.length) for w in work] == [(a, 1), (b, 5)]


def test_a_request_waits_until_blocks_are_free() -> None:
    s = make(4)
    a, b = seq(list(range(8))), seq(list(range(100, 108)))
    s.add(a)
    s.add(b)
    step(s)
    assert (a.phase, b.phase) == (Phase.RUNNING, Phase.WAITING)  # 2 + 2 blocks + 1 spare do not fit
    s.remove(a)
    step(s)
    assert (b.phase,) == (Phase.RUNNING,)


def test_a_full_cache_preempts_the_newest_request_which_resumes_from_its_cached_blocks() -> None:
    s = make(5, chunk=16)
    a, b = seq(list(range(7))), seq(list(range(50, 57)))
    s.add(a)
    s.add(b)
    step(s)
    assert (a.phase, b.phase) == (Phase.RUNNING, Phase.RUNNING)
    for _ in range(4):
        step(s)
    assert s.preemptions >= 1
    assert (b.phase, b.blocks) == (Phase.WAITING, [])
    s.remove(a)
    step(s)
    assert (b.phase,) == (Phase.RUNNING,)
    assert b.computed > 0  # its full blocks were found in the prefix index again


def test_a_repeated_prompt_is_admitted_with_its_full_blocks_cached() -> None:
    s = make(16, chunk=16)
    a = seq(list(range(10)), max_new=1)
    s.add(a)
    step(s)
    assert a.phase is Phase.DONE
    s.remove(a)
    b = seq(list(range(10)))
    s.add(b)
    work = step(s)
    assert b.cached_tokens == 8 and work[0].start == 8
    assert s.prefix_hit_tokens == 8
