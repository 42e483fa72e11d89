"""Choosing the next token from logits: greedy, or temperature with top-k / top-p.

Randomness is counter-based: the noise for a row is a pure function of the request's seed and the index
of the token being chosen. The same seed and prompt therefore give the same text whatever else shares the
batch, and a request that is preempted and recomputed draws the same numbers again.

Sampling is the Gumbel-max trick: ``argmax(logits / T + Gumbel noise)`` is an exact draw from
``softmax(logits / T)``, and it needs no cumulative sums, which is what lets the GPU kernel in
:mod:`accord.kernels.cuda` do the same thing in one pass (with its own counter-based generator, so a
seed gives one sequence on CPU and another, equally fixed, on a GPU).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from accord.kernels import cuda

_MASK64 = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class SamplingRow:
    """How to choose one row's token. ``temperature == 0`` is greedy (top-k/top-p then do nothing)."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int = 0
    #: Index of the token being chosen within the request (0 for the first generated token).
    step: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0


def mix_seed(seed: int, step: int) -> int:
    """One 63-bit generator seed per (request seed, step): splitmix64 over both."""
    z = (seed * 0x9E3779B97F4A7C15 + step * 0xBF58476D1CE4E5B9 + 0x94D049BB133111EB) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (z ^ (z >> 31)) & ((1 << 63) - 1)


def filter_logits(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """``logits`` [V] (already divided by the temperature) with tokens outside top-k / top-p at -inf."""
    vocab = logits.shape[-1]
    if top_k <= 0 and top_p >= 1.0:
        return logits
    k = min(top_k, vocab) if top_k > 0 else vocab
    if k < vocab:
        values, indices = torch.topk(logits, k)
    else:
        values, indices = torch.sort(logits, descending=True)
    if top_p < 1.0:
        probs = torch.softmax(values, dim=-1)
        # Keep the smallest head of the sorted list whose mass reaches top_p (always at least one).
        drop = (torch.cumsum(probs, dim=-1) - probs) >= top_p
        drop[0] = False
        values = values.masked_fill(drop, float("-inf"))
    out = torch.full_like(logits, float("-inf"))
    return out.scatter_(-1, indices, values)


def gumbel_noise(vocab: int, row: SamplingRow, device: torch.device) -> torch.Tensor:
    generator = torch.Generator(device="cpu")
    generator.manual_seed(mix_seed(row.seed, row.step))
    uniform = torch.rand(vocab, generator=generator, dtype=torch.float64).clamp_(min=1e-300)
    return (-torch.log(-torch.log(uniform))).float().to(device)


def sample(logits: torch.Tensor, rows: list[SamplingRow]) -> list[int]:
    """One token per row of ``logits`` [B, V] (float32)."""
    if logits.shape[0] != len(rows):
        raise ValueError("one SamplingRow per logits row")
    if logits.device.type == "cuda" and cuda.available():
        return _sample_cuda(logits, rows)
    choices = logits.argmax(dim=-1).tolist()
    for i, row in enumerate(rows):
        if row.greedy:
            continue
        scores = filter_logits(logits[i] / row.temperature, row.top_k, row.top_p)
        scores = scores + gumbel_noise(scores.shape[-1], row, scores.device)
        choices[i] = int(scores.argmax())
    return [int(c) for c in choices]


def _sample_cuda(logits: torch.Tensor, rows: list[SamplingRow]) -> list[int]:
    """Filtering in torch, then the cupy kernel draws every row in one launch."""
    scaled = torch.stack(
        [
            logits[i] if r.greedy else filter_logits(logits[i] / r.temperature, r.top_k, r.top_p)
            for i, r in enumerate(rows)
        ]
    )
    device = logits.device
    temperature = torch.tensor([0.0 if r.greedy else 1.0 for r in rows], device=device)
    seeds = torch.tensor([r.seed for r in rows], dtype=torch.int64, device=device)
    steps = torch.tensor([r.step for r in rows], dtype=torch.int64, device=device)
    return [int(t) for t in cuda.gumbel_argmax(scaled, temperature, seeds, steps).tolist()]
