"""The cupy kernels, on a GPU only (skipped where cupy or a CUDA device is missing)."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch

from accord.kernels import cuda
from accord.kernels.quant import QuantKind

pytestmark = pytest.mark.skipif(not cuda.available(), reason="needs cupy and a CUDA device")

TYPES = {
    QuantKind.Q4_0: gguf.GGMLQuantizationType.Q4_0,
    QuantKind.Q4_1: gguf.GGMLQuantizationType.Q4_1,
    QuantKind.Q8_0: gguf.GGMLQuantizationType.Q8_0,
}


@pytest.mark.parametrize("kind", list(QuantKind))
def test_cupy_dequantize_matches_gguf(kind: QuantKind) -> None:
    rng = np.random.default_rng(0)
    raw = gguf.quants.quantize(rng.standard_normal((48, 256)).astype(np.float32), TYPES[kind])
    got = cuda.dequantize(torch.from_numpy(raw).cuda(), kind).cpu().numpy()
    np.testing.assert_array_equal(got, gguf.quants.dequantize(raw, TYPES[kind]))


def test_cupy_sampling_is_greedy_at_zero_and_deterministic_per_seed() -> None:
    logits = torch.randn(4, 3000, device="cuda")
    t = torch.tensor([0.0, 0.0, 1.0, 1.0], device="cuda")
    seeds = torch.tensor([1, 2, 3, 3], device="cuda")
    steps = torch.tensor([0, 0, 5, 5], device="cuda")
    out = cuda.gumbel_argmax(logits, t, seeds, steps)
    assert out[:2].tolist() == logits[:2].argmax(1).tolist()
    again = cuda.gumbel_argmax(logits, t, seeds, steps)
    assert torch.equal(out, again)
    logits[3] = logits[2]
    assert int(out[2]) == int(cuda.gumbel_argmax(logits, t, seeds, steps)[3])


def test_cupy_sampling_frequencies_follow_the_softmax() -> None:
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]], device="cuda").repeat(4000, 1)
    t = torch.full((4000,), 0.7, device="cuda")
    out = cuda.gumbel_argmax(
        logits, t, torch.full((4000,), 9, device="cuda"), torch.arange(4000, device="cuda")
    )
    freq = torch.bincount(out.cpu(), minlength=4).float() / 4000
    torch.testing.assert_close(freq, torch.softmax(logits[0].cpu() / 0.7, 0), rtol=0, atol=0.03)
