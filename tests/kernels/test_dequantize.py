"""Dequantisation and the compact 4-bit form agree with the gguf package's reference implementation."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch

from accord.engine.local._gguf import ModelFile
from accord.kernels.linear import Int4Linear, StackedLinear
from accord.kernels.quant import (
    QuantKind,
    dequantize,
    dequantize_int4,
    quantize_int4,
    split_int4,
    unpack_int4,
)

KINDS = {
    QuantKind.Q4_0: gguf.GGMLQuantizationType.Q4_0,
    QuantKind.Q4_1: gguf.GGMLQuantizationType.Q4_1,
    QuantKind.Q8_0: gguf.GGMLQuantizationType.Q8_0,
}


def quantized(kind: QuantKind, rows: int = 24, cols: int = 96, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = (rng.standard_normal((rows, cols)) * rng.uniform(0.01, 2.0, (rows, 1))).astype(np.float32)
    weights[0, :32] = 0.0  # a block of zeros has scale 0
    return gguf.quants.quantize(weights, KINDS[kind])


@pytest.mark.parametrize("kind", list(QuantKind))
def test_dequantize_matches_gguf_bit_for_bit(kind: QuantKind) -> None:
    """The torch kernel must reproduce ggml's numbers exactly, or every later comparison is off."""
    raw = quantized(kind)
    expected = gguf.quants.dequantize(raw, KINDS[kind])
    got = dequantize(torch.from_numpy(raw), kind).numpy()
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("kind", [QuantKind.Q4_0, QuantKind.Q4_1])
def test_int4_split_keeps_every_weight(kind: QuantKind) -> None:
    """The (q - 8) * scale + zero form is exact in float32 and within bf16 rounding in bf16."""
    raw = torch.from_numpy(quantized(kind, seed=1))
    expected = dequantize(raw, kind)
    exact = dequantize_int4(split_int4(raw, kind, torch.float32), torch.float32)
    torch.testing.assert_close(exact, expected, rtol=1e-6, atol=1e-6)
    compact = dequantize_int4(split_int4(raw, kind)).float()
    torch.testing.assert_close(compact, expected, rtol=1e-2, atol=1e-2 * float(expected.abs().max()))


def test_unpack_int4_puts_low_nibbles_first_in_each_block() -> None:
    nibbles = torch.tensor([[0x21] * 16], dtype=torch.uint8)
    values = unpack_int4(nibbles)[0].tolist()
    assert values == [1] * 16 + [2] * 16


@pytest.mark.parametrize("kind", [QuantKind.Q4_0, QuantKind.Q4_1])
def test_int4_matmul_matches_the_dequantised_matrix(kind: QuantKind) -> None:
    raw = torch.from_numpy(quantized(kind, rows=64, cols=128, seed=2))
    weight = dequantize(raw, kind)
    linear = Int4Linear(split_int4(raw, kind))
    x = torch.randn(5, 128, generator=torch.Generator().manual_seed(0)).bfloat16()
    expected = x.float() @ weight.T
    scale = float(expected.abs().max())
    torch.testing.assert_close(linear.matmul(x).float(), expected, rtol=0, atol=0.02 * scale)
    torch.testing.assert_close((x @ linear.dense().T).float(), expected, rtol=0, atol=0.02 * scale)


def test_int4_matmul_rows_do_not_depend_on_the_batch() -> None:
    """A request's numbers must be the same alone and batched: row i of a product is the same for any M."""
    raw = torch.from_numpy(quantized(QuantKind.Q4_1, rows=96, cols=256, seed=3))
    linear = Int4Linear(split_int4(raw, QuantKind.Q4_1))
    x = torch.randn(40, 256, generator=torch.Generator().manual_seed(1)).bfloat16()
    alone = linear.matmul(x[:3])
    for m in (3, 4, 17, 40):
        assert torch.equal(linear.matmul(x[:m])[:3], alone)


@pytest.mark.model
def test_packaged_model_tensors_dequantise_like_gguf(smollm2_file: ModelFile) -> None:
    """Real tensors of the shipped file (Q4_1 projections, the Q8_0 embedding table)."""
    for name in ("blk.0.attn_q.weight", "blk.29.ffn_down.weight", "token_embd.weight"):
        tensor = smollm2_file.tensors[name]
        assert isinstance(tensor.kind, QuantKind)
        raw = np.array(tensor.data[:64])
        expected = gguf.quants.dequantize(raw, KINDS[tensor.kind])
        np.testing.assert_array_equal(dequantize(torch.from_numpy(raw), tensor.kind).numpy(), expected)


def test_quantize_int4_stays_within_half_a_step_of_each_weight() -> None:
    weight = torch.randn(16, 128, generator=torch.Generator().manual_seed(4)) * 3
    weight[2, :32] = 1.5  # a constant block
    blocks = quantize_int4(weight, torch.float32)
    back = dequantize_int4(blocks, torch.float32)
    step = blocks.scale.repeat_interleave(32, dim=1)
    assert bool(((back - weight).abs() <= step / 2 + 1e-5).all())
    assert torch.equal(back[2, :32], weight[2, :32])


def test_stacked_row_blocks_multiply_like_the_whole_matrix() -> None:
    raw = torch.from_numpy(quantized(QuantKind.Q4_0, rows=128, cols=64, seed=5))
    whole = Int4Linear(split_int4(raw, QuantKind.Q4_0))
    stacked = StackedLinear(
        [Int4Linear(split_int4(raw[i : i + 32], QuantKind.Q4_0)) for i in range(0, 128, 32)]
    )
    x = torch.randn(3, 64, generator=torch.Generator().manual_seed(6)).bfloat16()
    assert stacked.out_features == 128
    assert torch.equal(stacked.matmul(x), whole.matmul(x))
    assert torch.equal(stacked.dense(), whole.dense())


@pytest.mark.parametrize("rows", [128, 96])
def test_dense_path_reads_the_same_matrix_whichever_copy_it_keeps(rows: int) -> None:
    """Row counts that are not whole 64-row packing blocks keep the nibbles; both give one matrix."""
    raw = torch.from_numpy(quantized(QuantKind.Q4_1, rows=rows, cols=96, seed=7))
    blocks = split_int4(raw, QuantKind.Q4_1)
    linear = Int4Linear(blocks)
    assert (linear.nibbles is None) == linear.reads_packed
    if rows % 64:
        assert not linear.reads_packed
    assert torch.equal(linear.dense(), dequantize_int4(blocks))
