"""RMSNorm and rotary embedding against plain reference formulas."""

from __future__ import annotations

import math

import torch

from accord.kernels.norm import rms_norm
from accord.kernels.rotary import RotaryTable, apply_rotary

GEN = torch.Generator().manual_seed(0)


def test_rms_norm_matches_the_formula() -> None:
    x = torch.randn(7, 64, generator=GEN) * 3
    w = torch.rand(64, generator=GEN)
    expected = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5) * w
    torch.testing.assert_close(rms_norm(x, w, 1e-5), expected)
    out = rms_norm(x, w, 1e-5, torch.bfloat16)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), expected, rtol=1e-2, atol=1e-2)


def reference_rotary(x: torch.Tensor, positions: list[int], base: float) -> torch.Tensor:
    """llama.cpp's rotation, element pair by element pair."""
    out = x.clone().double()
    d = x.shape[-1]
    for n, pos in enumerate(positions):
        for i in range(d // 2):
            theta = pos * base ** (-2 * i / d)
            c, s = math.cos(theta), math.sin(theta)
            a, b = x[n, :, 2 * i].double(), x[n, :, 2 * i + 1].double()
            out[n, :, 2 * i] = a * c - b * s
            out[n, :, 2 * i + 1] = a * s + b * c
    return out.float()


def test_rotary_matches_pairwise_rotation() -> None:
    table = RotaryTable(16, 10000.0, 64)
    x = torch.randn(4, 3, 16, generator=GEN)
    positions = [0, 1, 17, 63]
    got = apply_rotary(x, table.lookup(torch.tensor(positions)))
    torch.testing.assert_close(got, reference_rotary(x, positions, 10000.0), rtol=1e-4, atol=1e-5)


def rotate_halves(x: torch.Tensor, pos: torch.Tensor, base: float) -> torch.Tensor:
    """Hugging Face's rotation: element i turns with element i + d/2."""
    d = x.shape[-1]
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = pos[:, None].double() * inv[None, :]
    cos, sin = torch.cat([ang.cos()] * 2, -1)[:, None], torch.cat([ang.sin()] * 2, -1)[:, None]
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return (x.double() * cos + torch.cat([-x2, x1], -1).double() * sin).float()


def test_gguf_row_permutation_with_pair_rotation_equals_half_rotation() -> None:
    """Why the forward pass can keep GGUF's row order: scores q.k come out the same as Hugging Face's."""
    heads, d, k_in = 2, 16, 24
    wq, wk = torch.randn(heads * d, k_in, generator=GEN), torch.randn(heads * d, k_in, generator=GEN)

    def to_gguf(w: torch.Tensor) -> torch.Tensor:  # the converter's permutation
        return w.reshape(heads, 2, d // 2, k_in).swapaxes(1, 2).reshape(heads * d, k_in)

    h = torch.randn(5, k_in, generator=GEN)
    pos = torch.tensor([0, 3, 4, 9, 30])
    q_hf = rotate_halves((h @ wq.T).view(5, heads, d), pos, 10000.0)
    k_hf = rotate_halves((h @ wk.T).view(5, heads, d), pos, 10000.0)
    table = RotaryTable(d, 10000.0, 32)
    q_gg = apply_rotary((h @ to_gguf(wq).T).view(5, heads, d), table.lookup(pos))
    k_gg = apply_rotary((h @ to_gguf(wk).T).view(5, heads, d), table.lookup(pos))
    scores_hf = torch.einsum("qhd,khd->hqk", q_hf, k_hf)
    scores_gg = torch.einsum("qhd,khd->hqk", q_gg, k_gg)
    torch.testing.assert_close(scores_gg, scores_hf, rtol=1e-4, atol=1e-4)
