"""GGML block quantisation: dequantisation and the compact 4-bit form the CPU matmul reads.

Layouts (one block covers 32 consecutive weights of a row):

- Q4_0, 18 bytes: fp16 scale ``d``, then 16 bytes of nibbles; ``w = d * (q - 8)``.
- Q4_1, 20 bytes: fp16 scale ``d``, fp16 minimum ``m``, 16 bytes of nibbles; ``w = d * q + m``.
- Q8_0, 34 bytes: fp16 scale ``d``, then 32 signed bytes; ``w = d * q``.

In the nibble bytes, byte ``j`` holds weight ``j`` in its low half and weight ``j + 16`` in its high half.

Every function takes the raw blocks of a matrix as a ``uint8`` tensor of shape ``[rows, row_bytes]`` (what
GGUF stores) and works on any torch device.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from accord.kernels.kinds import BLOCK as BLOCK
from accord.kernels.kinds import QuantKind as QuantKind


def _blocks(raw: torch.Tensor, kind: QuantKind) -> torch.Tensor:
    if raw.dtype != torch.uint8 or raw.dim() != 2 or raw.shape[1] % kind.block_bytes:
        raise ValueError(
            f"expected uint8 [rows, k * {kind.block_bytes}] blocks, got {raw.dtype} {tuple(raw.shape)}"
        )
    return raw.reshape(raw.shape[0], -1, kind.block_bytes)


def _half(blocks: torch.Tensor, offset: int) -> torch.Tensor:
    """The fp16 field at ``offset`` of every block, as float32 of shape [rows, nblocks, 1]."""
    return blocks[..., offset : offset + 2].contiguous().view(torch.float16).float()


def _nibbles(packed: torch.Tensor) -> torch.Tensor:
    """[..., 16] nibble bytes -> [..., 32] values 0..15 in weight order."""
    return torch.cat([packed & 0x0F, packed >> 4], dim=-1)


def dequantize(raw: torch.Tensor, kind: QuantKind) -> torch.Tensor:
    """Raw blocks ``[rows, row_bytes]`` -> float32 weights ``[rows, cols]``, exactly as ggml defines them."""
    blocks = _blocks(raw, kind)
    rows = blocks.shape[0]
    if kind is QuantKind.Q8_0:
        q = blocks[..., 2:].contiguous().view(torch.int8).float()
        return (q * _half(blocks, 0)).reshape(rows, -1)
    if kind is QuantKind.Q4_0:
        q = _nibbles(blocks[..., 2:]).float()
        return (_half(blocks, 0) * (q - 8.0)).reshape(rows, -1)
    q = _nibbles(blocks[..., 4:]).float()
    return (_half(blocks, 0) * q + _half(blocks, 2)).reshape(rows, -1)


class Int4Blocks(NamedTuple):
    """A 4-bit matrix in one affine form for both block kinds: ``w = (q - 8) * scale + zero``.

    ``nibbles`` keeps GGML's byte layout ([rows, cols / 2], two weights a byte) so the matrix stays at
    4.5-5 bits a weight; ``scale`` and ``zero`` are [rows, cols / 32].
    """

    nibbles: torch.Tensor
    scale: torch.Tensor
    zero: torch.Tensor


def split_int4(raw: torch.Tensor, kind: QuantKind, dtype: torch.dtype = torch.bfloat16) -> Int4Blocks:
    """Separate Q4_0 / Q4_1 blocks into nibbles and per-block affine parameters of ``dtype``."""
    if kind is QuantKind.Q8_0:
        raise ValueError("Q8_0 is not a 4-bit kind")
    blocks = _blocks(raw, kind)
    d = _half(blocks, 0)[..., 0]
    # Q4_1's minimum becomes the value at q = 8, so both kinds share the (q - 8) form torch's kernel uses.
    zero = torch.zeros_like(d) if kind is QuantKind.Q4_0 else _half(blocks, 2)[..., 0] + 8.0 * d
    start = 2 if kind is QuantKind.Q4_0 else 4
    nibbles = blocks[..., start:].reshape(blocks.shape[0], -1).contiguous()
    return Int4Blocks(nibbles, d.to(dtype), zero.to(dtype))


def unpack_int4(nibbles: torch.Tensor) -> torch.Tensor:
    """[rows, cols / 2] nibble bytes -> [rows, cols] uint8 values 0..15 in weight order."""
    rows = nibbles.shape[0]
    return _nibbles(nibbles.reshape(rows, -1, 16)).reshape(rows, -1)


def dequantize_int4(blocks: Int4Blocks, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """The dense matrix of ``blocks`` in ``dtype`` (the prefill path multiplies by this).

    The nibbles are written straight into the output, converting as they are copied, and the affine
    map is applied in place: four passes over the matrix, which the prefill path runs every step.
    """
    rows = blocks.nibbles.shape[0]
    packed = blocks.nibbles.reshape(rows, -1, 16)
    w = torch.empty(rows, packed.shape[1], BLOCK, dtype=dtype, device=packed.device)
    w[..., :16] = packed & 0x0F
    w[..., 16:] = packed >> 4
    w.sub_(8).mul_(blocks.scale.to(dtype).unsqueeze(-1)).add_(blocks.zero.to(dtype).unsqueeze(-1))
    return w.reshape(rows, -1)


def quantize_int4(weight: torch.Tensor, dtype: torch.dtype = torch.bfloat16) -> Int4Blocks:
    """Round a float matrix [rows, cols] to 4 bits a weight, per block of 32, spanning each block's range.

    Lossy: used where an approximate product is enough (finding the candidate tokens before their
    logits are recomputed exactly).
    """
    rows = weight.shape[0]
    blocks = weight.float().reshape(rows, -1, BLOCK)
    low, high = blocks.amin(-1), blocks.amax(-1)
    scale = (high - low) / 15
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.round((blocks - low.unsqueeze(-1)) / safe.unsqueeze(-1)).clamp_(0, 15).to(torch.uint8)
    nibbles = (q[..., :16] | (q[..., 16:] << 4)).reshape(rows, -1)
    return Int4Blocks(nibbles, scale.to(dtype), (low + 8 * scale).to(dtype))
