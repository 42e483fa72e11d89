"""Rotary position embedding, in the interleaved layout GGUF files are written for.

Hugging Face checkpoints rotate the two *halves* of a head (element ``i`` with ``i + d/2``); llama.cpp
rotates adjacent *pairs* (``2i`` with ``2i + 1``), and GGUF converters permute the rows of the Q and K
projections of every head so that pairs rotation on the permuted rows equals halves rotation on the
originals. Attention only uses the dot product of a query and a key, which the same permutation of both
leaves unchanged, so the forward pass keeps GGUF's row order and rotates pairs -- as one complex
multiplication per element pair, a handful of tensor ops for all heads at once.
"""

from __future__ import annotations

import torch


class RotaryTable:
    """``exp(i * position * frequency)`` for every position up to ``max_positions``, complex64."""

    def __init__(
        self,
        head_dim: int,
        base: float,
        max_positions: int,
        *,
        position_scale: float = 1.0,
        freq_factors: torch.Tensor | None = None,
        device: torch.device | str = "cpu",
    ) -> None:
        exponents = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim
        inv_freq = (1.0 / (base**exponents)).float()
        if freq_factors is not None:
            inv_freq = inv_freq / freq_factors.float().cpu()
        positions = torch.arange(max_positions, dtype=torch.float32) / position_scale
        angles = torch.outer(positions, inv_freq)
        self.rotations = torch.polar(torch.ones_like(angles), angles).to(device)

    def lookup(self, positions: torch.Tensor) -> torch.Tensor:
        """The rotation of each position, [N, 1, head_dim / 2] (broadcasts over heads)."""
        return self.rotations[positions].unsqueeze(1)


def apply_rotary(x: torch.Tensor, rotations: torch.Tensor) -> torch.Tensor:
    """Rotate each pair ``(x[2i], x[2i+1])`` of ``x`` [N, heads, head_dim]; float32 result."""
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * rotations).flatten(-2)
