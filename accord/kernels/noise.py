"""The seeded noise every sampler shares, and how one row's token is chosen (no torch here).

Randomness is counter-based: the noise of a token is a pure function of the request's seed, the index
of the token being chosen and the token's id (splitmix64), so the same seed and prompt give the same
text whatever else shares the batch. The C sampler (``csrc/sample.c``), the cupy kernel of
:mod:`accord.kernels.cuda` and the torch sampler of :mod:`accord.kernels.sampling` all draw this noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MASK64 = (1 << 64) - 1


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


def _splitmix(z: np.ndarray) -> np.ndarray:
    """splitmix64 over a uint64 array (wrapping arithmetic, as in the C and CUDA kernels)."""
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: np.ndarray = z ^ (z >> np.uint64(31))
    return out


def gumbel(tokens: np.ndarray, row: SamplingRow) -> np.ndarray:
    """The Gumbel noise of ``tokens`` (ids) for ``row``'s seed and step, float32."""
    seed = np.array([row.seed & MASK64], dtype=np.uint64)
    key = _splitmix(seed ^ _splitmix(np.array([row.step & MASK64], dtype=np.uint64)))
    h = _splitmix(key + tokens.astype(np.uint64))
    uniform = ((h >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)
    return -np.log(-np.log(uniform)).astype(np.float32)
