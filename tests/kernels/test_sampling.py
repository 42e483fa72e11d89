"""Token choice: greedy, top-k/top-p filtering and seeded Gumbel-max sampling."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from accord.kernels import decode
from accord.kernels.sampling import SamplingRow, filter_logits, gumbel, sample, sample_torch


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
    tokens = np.arange(4)
    noise = [gumbel(tokens, SamplingRow(seed=seed, step=step)) for seed, step in ((7, 0), (7, 1), (8, 0))]
    assert not np.array_equal(noise[0], noise[1]) and not np.array_equal(noise[0], noise[2])


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


@pytest.mark.skipif(not decode.available(), reason="the C kernels are not built")
@pytest.mark.parametrize(
    ("temperature", "top_k", "top_p"),
    [
        (0.0, 0, 1.0),
        (1.0, 0, 1.0),
        (0.2, 0, 0.9),
        (0.7, 40, 0.9),
        (1.3, 5, 1.0),
        (0.9, 0, 0.5),
        (2.0, 3000, 0.97),
    ],
)
def test_the_c_kernel_draws_what_torch_draws(temperature: float, top_k: int, top_p: float) -> None:
    """One definition, two implementations: the same seeds, steps and logits give the same tokens,
    with vocabularies where the nucleus is a few tokens and where it is thousands."""
    g = torch.Generator().manual_seed(int(temperature * 10) + top_k)
    for scale in (0.5, 3.0, 12.0):
        logits = torch.randn(6, 5000, generator=g) * scale
        rows = [
            SamplingRow(temperature=temperature, top_k=top_k, top_p=top_p, seed=s, step=s * 3)
            for s in range(6)
        ]
        assert sample(logits, rows) == sample_torch(logits, rows)


@pytest.mark.skipif(not decode.available(), reason="the C kernels are not built")
@pytest.mark.parametrize("scale", [0.3, 2.0, 6.0, 25.0])
def test_a_draw_over_the_whole_vocabulary_picks_what_every_tokens_noise_picks(scale: float) -> None:
    """The C draw computes a token's noise only where the token could still win (sample.c, could_win);
    the torch reference computes it for every token. Vocabularies of a real model's size, spreads from
    nearly flat (most tokens could win) to peaked (almost none), many seeds: the same token each time."""
    g = torch.Generator().manual_seed(int(scale * 10))
    logits = torch.randn(24, 49152, generator=g) * scale
    for temperature in (0.5, 1.0, 1.7):
        rows = [SamplingRow(temperature=temperature, seed=1000 + s, step=s * 7) for s in range(24)]
        assert sample(logits, rows) == sample_torch(logits, rows)


@pytest.mark.skipif(not decode.available(), reason="the C kernels are not built")
def test_greedy_takes_the_first_of_tied_best_tokens_anywhere_in_the_row() -> None:
    """argmax in sample.c finds the max in vector lanes, then its first index: ties go to the lowest."""
    for n in (1, 5, 16, 17, 49152, 49157):
        for places in ([n - 1], [0, n - 1], [n // 3, n // 2, n - 1], [15 % n, 16 % n]):
            row = np.random.default_rng(n).standard_normal(n).astype(np.float32)
            for i in places:
                row[i] = 9.0
            assert decode.sample(row[None, :], [SamplingRow(temperature=0.0)]) == [min(places)]


@pytest.mark.skipif(not decode.available(), reason="the C kernels are not built")
def test_a_draw_never_picks_a_nan_or_minus_infinity_token() -> None:
    """Broken logits (NaN, -inf) are never drawn, wherever they are, the first token included."""
    logits = np.random.default_rng(3).standard_normal((6, 3000)).astype(np.float32)
    logits[:, 0] = np.nan
    logits[1, :2000] = -np.inf
    logits[2, 5::7] = np.nan
    rows = [SamplingRow(temperature=1.0, seed=s, step=s) for s in range(6)]
    for token, row in zip(decode.sample(logits, rows), logits, strict=True):
        assert np.isfinite(row[token])


@pytest.mark.skipif(not decode.available(), reason="the C kernels are not built")
@pytest.mark.parametrize(("top_k", "top_p"), [(3, 1.0), (0, 0.5), (40, 0.9)])
def test_a_nan_does_not_hide_the_best_tokens_from_top_k_and_top_p(top_k: int, top_p: float) -> None:
    """The partial selection skips 32 tokens at a time where none is above its least; a NaN at the
    start of such a stretch must not hide the best tokens behind it."""
    logits = np.random.default_rng(4).standard_normal((8, 4096)).astype(np.float32)
    logits[:, 0::32] = np.nan  # every stretch starts with one, the row's first token included
    logits[:, 1000:1003] = [30.0, 29.5, 29.0]
    rows = [SamplingRow(temperature=1.0, top_k=top_k, top_p=top_p, seed=s, step=s) for s in range(8)]
    assert set(decode.sample(logits, rows)) <= {1000, 1001, 1002}


@pytest.mark.skipif(not decode.available(), reason="the C kernels are not built")
def test_greedy_passes_over_nan_logits_the_first_included() -> None:
    """A NaN never wins a greedy row, wherever it is; a row of nothing but NaN gives token 0."""
    logits = np.random.default_rng(5).standard_normal((4, 49157)).astype(np.float32)
    logits[:, 0] = np.nan
    logits[1, 1::3] = np.nan
    logits[2, :] = -np.inf
    logits[2, 0] = np.nan
    logits[2, 40000] = -1.0
    logits[3, :] = np.nan
    expected = [int(np.nanargmax(logits[0])), int(np.nanargmax(logits[1])), 40000, 0]
    rows = [SamplingRow(temperature=0.0)] * 4
    assert decode.sample(logits, rows) == expected
    assert sample_torch(torch.from_numpy(logits), rows) == expected
