"""Matrix-vector products against weights that stay quantised where the device allows it.

Two paths, chosen per call by the caller and each *row-invariant* (a row's result does not depend on the
other rows in the call, which is what keeps a request's tokens the same alone and in a batch):

- ``matmul``: the small-M path (decode rows, short prompts). On CPU a 4-bit matrix goes through torch's
  grouped int4 kernel, reading 4.5 bits a weight instead of 16 -- decode is bound by memory bandwidth.
- ``dense``: the whole matrix, for prompt rows, in float32 by the model's choice: a float32 GEMM beats the
  int4 kernel several times over even counting the dequantisation, and on CPUs without native bf16
  arithmetic (AVX2, and AVX-512 before Cooper Lake) it is also faster than a bf16 GEMM -- measured 4-9x
  on AVX2 -- and it adds no rounding of the weights or the activations.
"""

from __future__ import annotations

from typing import Protocol

import torch
import torch.nn.functional as F

from accord.kernels.quant import Int4Blocks, dequantize_int4, unpack_int4

GROUP = 32


class Linear(Protocol):
    @property
    def out_features(self) -> int: ...

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ W.T`` for ``x`` of shape [M, in] in the compute dtype."""
        ...

    def dense(self, dtype: torch.dtype | None = None) -> torch.Tensor:
        """The [out, in] matrix in ``dtype`` (default: the compute dtype); may be computed on every call."""
        ...


class DenseLinear:
    def __init__(self, weight: torch.Tensor) -> None:
        self.weight = weight.contiguous()

    @property
    def out_features(self) -> int:
        return int(self.weight.shape[0])

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight)

    def dense(self, dtype: torch.dtype | None = None) -> torch.Tensor:
        return self.weight if dtype is None else self.weight.to(dtype)


class Int4Linear:
    """A 4-bit matrix for CPU, packed for torch's int4 kernel; ``dense`` dequantises it for prompts.

    torch's packed layout is private to its kernel. Where it is the one :func:`_read_packed` knows --
    checked on this very matrix, at build time -- the dense path reads the packed copy and the matrix is
    held once, at 4.5 bits a weight. Otherwise it keeps GGML's nibbles beside it (half a byte a weight
    more). A matrix built with ``dense_path=False`` is only ever used through ``matmul``.
    """

    def __init__(self, blocks: Int4Blocks, *, dense_path: bool = True) -> None:
        if blocks.nibbles.device.type != "cpu":
            raise ValueError("Int4Linear is the CPU path; dequantise for other devices")
        self.rows = int(blocks.nibbles.shape[0])
        values = unpack_int4(blocks.nibbles)
        self.packed = torch._convert_weight_to_int4pack_for_cpu(values.to(torch.int32), 1)
        # torch's kernel wants [in / 32, out, (scale, zero)] in the activation dtype.
        self.scale_zero = torch.stack([blocks.scale, blocks.zero], dim=-1).transpose(0, 1).contiguous()
        self.dense_path = dense_path
        self.reads_packed = dense_path and _layout_known(self.packed, values)
        self.nibbles = blocks.nibbles if dense_path and not self.reads_packed else None

    @property
    def out_features(self) -> int:
        return self.rows

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        return torch._weight_int4pack_mm_for_cpu(x, self.packed, GROUP, self.scale_zero)

    def dense(self, dtype: torch.dtype | None = None) -> torch.Tensor:
        if not self.dense_path:
            raise RuntimeError("this matrix was built without its dense path")
        per_row = self.scale_zero.transpose(0, 1)
        out = per_row.dtype if dtype is None else dtype
        scale, zero = per_row[..., 0].unsqueeze(-1).to(out), per_row[..., 1].unsqueeze(-1).to(out)
        if self.nibbles is not None:
            return dequantize_int4(Int4Blocks(self.nibbles, per_row[..., 0], per_row[..., 1]), out)
        cols = self.packed.shape[1] * 2
        w = _read_packed(self.packed, self.rows, cols, out).view(self.rows, -1, GROUP)
        return w.sub_(8).mul_(scale).add_(zero).view(self.rows, cols)


# torch's AVX-512 packing: rows in blocks of 64; for each column k, 32 bytes whose low nibbles hold rows
# 0..31 of the block and high nibbles rows 32..63.
_PACK_ROWS = 64


def _read_packed(packed: torch.Tensor, rows: int, cols: int, dtype: torch.dtype) -> torch.Tensor:
    """Values 0..15 [rows, cols] of a matrix packed by ``_convert_weight_to_int4pack_for_cpu``, as ``dtype``."""
    blocks = rows // _PACK_ROWS
    src = packed.reshape(blocks, cols, 2, 16)
    out = torch.empty(blocks, 2, 2, 16, cols, dtype=dtype, device=packed.device)
    out[:, 0] = (src & 0x0F).permute(0, 2, 3, 1)
    out[:, 1] = (src >> 4).permute(0, 2, 3, 1)
    return out.view(rows, cols)


def _layout_known(packed: torch.Tensor, values: torch.Tensor) -> bool:
    rows, cols = values.shape
    if rows % _PACK_ROWS or packed.numel() * 2 != rows * cols:
        return False
    return torch.equal(_read_packed(packed, rows, cols, torch.uint8), values)


class StackedLinear:
    """Row blocks of one matrix, each its own ``Linear``; products are concatenated.

    Lets a very tall matrix (a vocabulary projection) be converted block by block, so building it never
    needs a full-size temporary.
    """

    def __init__(self, parts: list[Linear]) -> None:
        self.parts = parts

    @property
    def out_features(self) -> int:
        return sum(p.out_features for p in self.parts)

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([p.matmul(x) for p in self.parts], dim=-1)

    def dense(self, dtype: torch.dtype | None = None) -> torch.Tensor:
        return torch.cat([p.dense(dtype) for p in self.parts])


def gemm_rows_vary(inner: int = 1536, outer: int = 576, seed: int = 0) -> bool:
    """Whether a float32 GEMM on this process's BLAS gives a row different results by how many rows
    share the call -- the property batch invariance of prompt rows rests on (see ``accord/__init__``).

    Probed at the down projection's shape with 37 rows, alone and beside 1..96 others; about 20 ms.
    """
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(outer, inner, generator=gen)
    rows = torch.randn(37, inner, generator=gen)
    alone = F.linear(rows, weight)
    for others in range(1, 97, 4):
        batch = torch.cat([rows, torch.randn(others, inner, generator=gen)])
        if not torch.equal(F.linear(batch, weight)[:37], alone):
            return True
    return False
