"""Token choice: greedy, top-k/top-p filtering and seeded Gumbel-max sampling."""

from __future__ import annotations

import math

import torch

from accord.kernels.sampling import SamplingRow, filter_logits, mix_seed, sample


def reference_filter(logits: list[float], top_k: int, top_p: float) -> set[int]:
    """The tokens a plain sort-and-accumulate keeps."""
    order = sorted(range(len(logits)), key=lambda i: -logits[i])
    if top_k > 0:
        order = order[:top_k]
    weights = [math.exp(logits[i] - logits[order[0]]) for i in order]
    total = sum(weights)
    kept: list[int] = []
    mass = 0.0
    for i, w in zip(order, weights, strict=True):
        if kept and mass >= top_p:
            break
        kept.append(i)
        mass += w / total
    return set(kept)


def test_filter_keeps_what_a_plain_implementation_keeps() -> None:
    g = torch.Generator().manual_seed(0)
    for _ in range(50):
        logits = torch.randn(40, generator=g) * 2
        top_k = int(torch.randint(0, 12, (1,), generator=g))
        top_p = float(torch.rand(1, generator=g)) * 0.99 + 0.01
        kept = torch.isfinite(filter_logits(logits, top_k, top_p)).nonzero().flatten().tolist()
        assert set(kept) == reference_filter(logits.tolist(), top_k, top_p)


def test_filter_keeps_the_best_token_even_with_top_p_zero() -> None:
    logits = torch.tensor([0.1, 3.0, 2.0])
    assert torch.isfinite(filter_logits(logits, 0, 0.0)).nonzero().flatten().tolist() == [1]


def test_greedy_rows_take_the_argmax() -> None:
    logits = torch.tensor([[0.0, 5.0, 1.0], [9.0, 1.0, 2.0]])
    assert sample(logits, [SamplingRow(temperature=0.0), SamplingRow(temperature=0.0)]) == [1, 0]


def test_same_seed_and_step_draw_the_same_token_whatever_the_batch() -> None:
    logits = torch.randn(3, 500, generator=torch.Generator().manual_seed(1))
    rows = [SamplingRow(temperature=1.0, seed=7, step=s) for s in range(3)]
    together = sample(logits, rows)
    alone = [sample(logits[i : i + 1], [rows[i]])[0] for i in range(3)]
    assert together == alone
    assert mix_seed(7, 0) != mix_seed(7, 1) != mix_seed(8, 0)


def test_sampling_frequencies_follow_the_softmax() -> None:
    """Gumbel-max is an exact draw: 4,000 draws land within a few percent of the distribution."""
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    probs = torch.softmax(logits[0] / 0.7, 0)
    counts = torch.zeros(4)
    for step in range(4000):
        counts[sample(logits, [SamplingRow(temperature=0.7, seed=3, step=step)])[0]] += 1
    torch.testing.assert_close(counts / 4000, probs, rtol=0, atol=0.03)


def test_top_k_one_is_greedy_at_any_temperature() -> None:
    logits = torch.randn(1, 100, generator=torch.Generator().manual_seed(2))
    best = int(logits.argmax())
    assert {sample(logits, [SamplingRow(temperature=1.5, top_k=1, seed=s)])[0] for s in range(20)} == {best}
