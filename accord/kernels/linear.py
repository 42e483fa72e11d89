"""Matrix-vector products against weights that stay quantised where the device allows it.

Two paths, chosen per call by the caller and each *row-invariant* (a row's result does not depend on the
other rows in the call, which is what keeps a request's tokens the same alone and in a batch):

- ``matmul``: the small-M path (decode rows, short prompts). On CPU a 4-bit matrix goes through torch's
  grouped int4 kernel, reading 4.5 bits a weight instead of 16 -- decode is bound by memory bandwidth.
- ``dense``: the matrix in the compute dtype, for long prompt chunks, where a bf16 GEMM beats the int4
  kernel several times over even counting the dequantisation.
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

    def dense(self) -> torch.Tensor:
        """The [out, in] matrix in the compute dtype (may be computed on every call)."""
        ...


class DenseLinear:
    def __init__(self, weight: torch.Tensor) -> None:
        self.weight = weight.contiguous()

    @property
    def out_features(self) -> int:
        return int(self.weight.shape[0])

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight)

    def dense(self) -> torch.Tensor:
        return self.weight


class Int4Linear:
    """A 4-bit matrix for CPU: packed for torch's int4 kernel, plus (if ``dense_path``) the nibbles.

    torch's packed layout is private to its kernel, so the dense path keeps GGML's nibbles as well (half
    a byte a weight more); a matrix only ever used through ``matmul`` drops them.
    """

    def __init__(self, blocks: Int4Blocks, *, dense_path: bool = True) -> None:
        if blocks.nibbles.device.type != "cpu":
            raise ValueError("Int4Linear is the CPU path; dequantise for other devices")
        self.rows = int(blocks.nibbles.shape[0])
        values = unpack_int4(blocks.nibbles).to(torch.int32)
        self.packed = torch._convert_weight_to_int4pack_for_cpu(values, 1)
        # torch's kernel wants [in / 32, out, (scale, zero)] in the activation dtype.
        self.scale_zero = torch.stack([blocks.scale, blocks.zero], dim=-1).transpose(0, 1).contiguous()
        self.nibbles = blocks.nibbles if dense_path else None

    @property
    def out_features(self) -> int:
        return self.rows

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        return torch._weight_int4pack_mm_for_cpu(x, self.packed, GROUP, self.scale_zero)

    def dense(self) -> torch.Tensor:
        if self.nibbles is None:
            raise RuntimeError("this matrix was built without its dense path")
        per_row = self.scale_zero.transpose(0, 1)
        return dequantize_int4(
            Int4Blocks(self.nibbles, per_row[..., 0], per_row[..., 1]), self.scale_zero.dtype
        )


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

    def dense(self) -> torch.Tensor:
        return torch.cat([p.dense() for p in self.parts])
