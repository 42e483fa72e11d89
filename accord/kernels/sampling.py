"""Choosing the next token from logits: greedy, or temperature with top-k / top-p.

Randomness is counter-based: the noise of a token is a pure function of the request's seed, the index
of the token being chosen and the token's id (splitmix64). The same seed and prompt therefore give the
same text whatever else shares the batch, and a request that is preempted and recomputed draws the same
numbers again.

Sampling is the Gumbel-max trick: ``argmax(logits / T + Gumbel noise)`` over the tokens top-k / top-p
keep is an exact draw from their softmax, and it needs no cumulative sums. Three implementations share
one definition -- the C kernels (``csrc/sample.c``, used on CPU where they are built), the cupy kernel
of :mod:`accord.kernels.cuda`, and torch here -- so a seed draws the same token from the same logits
whichever runs.
"""

from __future__ import annotations

import numpy as np
import torch

from accord.kernels import cuda, decode
from accord.kernels.noise import SamplingRow, gumbel

__all__ = ["SamplingRow", "filter_logits", "gumbel", "sample", "sample_torch"]


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


def sample(logits: torch.Tensor, rows: list[SamplingRow]) -> list[int]:
    """One token per row of ``logits`` [B, V] (float32)."""
    if logits.shape[0] != len(rows):
        raise ValueError("one SamplingRow per logits row")
    if logits.device.type == "cuda" and cuda.available():
        return _sample_cuda(logits, rows)
    if decode.available() and logits.device.type == "cpu":
        return decode.sample(logits.to(torch.float32).contiguous().numpy(), rows)
    return sample_torch(logits, rows)


def _without_nan(logits: torch.Tensor) -> torch.Tensor:
    """NaN logits as -inf, as the C kernels take them: never chosen, greedy or drawn."""
    return logits.masked_fill(logits.isnan(), float("-inf"))


def sample_torch(logits: torch.Tensor, rows: list[SamplingRow]) -> list[int]:
    """:func:`sample` in torch: what a CPU without the C kernels runs (and what they are tested against)."""
    logits = _without_nan(logits)
    choices = logits.argmax(dim=-1).tolist()
    for i, row in enumerate(rows):
        if row.greedy:
            continue
        scores = filter_logits(logits[i] / row.temperature, row.top_k, row.top_p)
        kept = torch.isfinite(scores).nonzero().flatten().cpu().numpy()
        noisy = scores.cpu().numpy()[kept] + gumbel(kept, row)
        choices[i] = int(kept[int(np.argmax(noisy))])
    return [int(c) for c in choices]


def _sample_cuda(logits: torch.Tensor, rows: list[SamplingRow]) -> list[int]:
    """Filtering in torch, then the cupy kernel draws every row in one launch."""
    logits = _without_nan(logits)
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
