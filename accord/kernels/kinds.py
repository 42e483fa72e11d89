"""The GGML block kinds the kernels read as stored (no torch here: the C path imports this alone).

One block covers 32 consecutive weights of a row; ``block_bytes`` is its size. Layouts are in
:mod:`accord.kernels.quant`.
"""

from __future__ import annotations

import enum

BLOCK = 32


class QuantKind(enum.Enum):
    Q4_0 = "Q4_0"
    Q4_1 = "Q4_1"
    Q8_0 = "Q8_0"

    @property
    def block_bytes(self) -> int:
        return _BLOCK_BYTES[self]


_BLOCK_BYTES = {QuantKind.Q4_0: 18, QuantKind.Q4_1: 20, QuantKind.Q8_0: 34}
