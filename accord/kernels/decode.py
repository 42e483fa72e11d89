"""Decode steps in C: a whole Llama step per call, over weights kept as GGML blocks.

Why. A decode step of a small model is some two thousand small ops; run one torch call at a time, the
interpreter and the dispatch between them cost more than the arithmetic (a SmolLM2-135M token took
~30 ms on two cores against llama.cpp's ~9). The C step (``csrc/``) runs every layer in one call on a
team of threads that meet at barriers between phases, multiplies 8-bit activations by the 4- and 8-bit
blocks as the file stores them (one integer dot product per 32 weights, as llama.cpp does), and releases
the GIL while it runs.

No torch here. The engine's C path holds its buffers as numpy arrays (the KV cache as the bf16 bit
patterns, ``uint16``), so a server on it never imports torch, a fifth of a GiB of memory. The few
methods that take and give torch tensors are for the torch path and for tests, and import it when
called.

Which instruction set: the best this CPU has -- AVX-512 with VNNI, AVX2, or the x86-64 baseline --
limited the way torch's own kernels are by ``ATEN_CPU_CAPABILITY`` (``default``, ``avx2``, ``avx512``),
so every path can be run and tested on one machine. The extension is optional: where it was not built
(no C compiler at install), or where ``ACCORD_C_KERNELS=off``, :func:`available` is False and the
engine runs its torch path.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from accord.kernels.kinds import QuantKind
from accord.kernels.noise import MASK64, SamplingRow

if TYPE_CHECKING:
    import torch

try:
    from accord.kernels import _decode as _EXT
except ImportError:  # not built: no C compiler at install
    _EXT = None  # type: ignore[assignment]
ISA_NAMES = {0: "x86-64", 1: "avx2", 2: "avx512-vnni", 3: "avx512-amx"}
_CAPABILITY_LIMIT = {"default": 0, "avx2": 1, "avx512": 2}
KIND_CODES = {QuantKind.Q4_0: 0, QuantKind.Q4_1: 1, QuantKind.Q8_0: 2}


def available() -> bool:
    """Whether the C kernels were built into this install and are not switched off
    (``ACCORD_C_KERNELS=off`` runs the torch path, to compare the two or to work around a fault)."""
    return _EXT is not None and os.environ.get("ACCORD_C_KERNELS", "").lower() not in (
        "0",
        "off",
        "false",
        "no",
    )


def built() -> bool:
    """Whether the C kernels were built into this install (whether or not they are switched off)."""
    return _EXT is not None


def instruction_set() -> int:
    """The instruction set the kernels use in this process (a key of ``ISA_NAMES``)."""
    if _EXT is None:  # pragma: no cover - only where the extension was not built
        raise RuntimeError("the decode kernels are not built in this install")
    have = max(_EXT.cpu_isas())
    limit = _CAPABILITY_LIMIT.get(os.environ.get("ATEN_CPU_CAPABILITY", "").lower(), have)
    return int(min(have, limit))


def _checked(isa: int) -> int:
    assert _EXT is not None
    if isa not in _EXT.cpu_isas():
        raise ValueError(f"this CPU cannot run {ISA_NAMES.get(isa, isa)}")
    return isa


def set_threads(n: int) -> int:
    """Size of the kernels' thread team (the calling thread included); returns the size set."""
    if _EXT is None:
        return 1
    return int(_EXT.set_threads(n))


def sample(logits: npt.NDArray[np.float32], rows: list[SamplingRow]) -> list[int]:
    """Each row's token (csrc/sample.c) from float32 ``logits`` [len(rows), vocab]."""
    assert _EXT is not None
    if logits.dtype != np.float32 or logits.ndim != 2 or logits.shape[0] != len(rows):
        raise ValueError("expected float32 logits [rows, vocab], one SamplingRow per row")
    logits = np.ascontiguousarray(logits)
    params = [(r.temperature, r.top_p, r.top_k, r.seed & MASK64, r.step) for r in rows]
    return _EXT.sample(logits.ctypes.data, int(logits.shape[0]), int(logits.shape[1]), params)


def supports(kind: QuantKind | str) -> bool:
    return available() and kind in KIND_CODES


#: Rows packed at a time (a multiple of the kernels' group of 16 rows).
PACK_CHUNK_ROWS = 4096


class PackedLinear:
    """A Q4_0, Q4_1 or Q8_0 matrix in the kernels' packed layout (``csrc/common.h``: rows in groups of
    16, the same bytes as the GGML blocks, rearranged so one vector load covers 16 rows).

    ``matmul`` multiplies through the C kernels (8-bit activations, as a decode step does); ``dense``
    and ``rows`` give float32 weights exactly as ggml defines the blocks.
    """

    def __init__(
        self,
        raw: npt.NDArray[np.uint8],
        kind: QuantKind,
        *,
        after_chunk: Callable[[], None] | None = None,
    ) -> None:
        """``raw``: the matrix's GGML blocks, uint8 [rows, row_bytes] -- such as a view of the model
        file's memory map, packed without a copy of it (a CPU torch tensor converts without one too).

        The rows are packed ``PACK_CHUNK_ROWS`` at a time, and ``after_chunk`` runs after each: a
        file-backed ``raw`` can let the pages it read go there, so that a large matrix (a token table)
        never holds all of its file pages resident beside its packed copy."""
        assert _EXT is not None
        if not supports(kind):
            raise ValueError(f"no block kernel for {kind}")
        array = np.ascontiguousarray(np.asarray(raw))
        if array.dtype != np.uint8 or array.ndim != 2:
            raise ValueError("expected CPU uint8 blocks [rows, row_bytes]")
        address, row_bytes = int(array.ctypes.data), int(array.shape[1])
        self.kind = kind
        self.rows = int(array.shape[0])
        self.cols = row_bytes // kind.block_bytes * 32
        code = KIND_CODES[kind]
        self.packed = np.empty(_EXT.packed_size(code, self.rows, self.cols), dtype=np.uint8)
        base = int(self.packed.ctypes.data)
        for begin in range(0, self.rows, PACK_CHUNK_ROWS):
            rows = min(PACK_CHUNK_ROWS, self.rows - begin)
            # Groups of rows are packed apart, so a chunk that starts on a group lands at its offset.
            into = base + (_EXT.packed_size(code, begin, self.cols) if begin else 0)
            _EXT.pack(code, address + begin * row_bytes, rows, self.cols, into)
            if after_chunk is not None:
                after_chunk()

    @property
    def out_features(self) -> int:
        return self.rows

    def describe(self) -> tuple[int, int, int, int]:
        """(address, kind code, rows, cols): what the C side reads the matrix by."""
        return (int(self.packed.ctypes.data), KIND_CODES[self.kind], self.rows, self.cols)

    def matmul(self, x: torch.Tensor, isa: int | None = None, *, precise: bool = False) -> torch.Tensor:
        """float32 ``x @ W.T``: with ``x`` quantised to 8 bits per block of 32, as a decode step does, or
        (``precise``) in float32 against the exact weights, as a prompt step does. ``isa``: an
        instruction set of ``ISA_NAMES`` the CPU has (default: this process's)."""
        import torch

        assert _EXT is not None
        x = x.to(torch.float32).contiguous()
        out = torch.empty(x.shape[0], self.rows, dtype=torch.float32)
        chosen = instruction_set() if isa is None else _checked(isa)
        _EXT.product(chosen, *self.describe(), x.data_ptr(), x.shape[0], out.data_ptr(), int(precise))
        return out

    def dense(self, dtype: torch.dtype | None = None) -> torch.Tensor:
        import torch

        assert _EXT is not None
        out = torch.empty(self.rows, self.cols, dtype=torch.float32)
        _EXT.unpack(KIND_CODES[self.kind], self.describe()[0], self.rows, self.cols, out.data_ptr())
        return out if dtype is None or dtype == torch.float32 else out.to(dtype)

    def rows_of(self, ids: torch.Tensor) -> torch.Tensor:
        """float32 rows ``ids`` [n] (a table lookup)."""
        import torch

        assert _EXT is not None
        ids = ids.to(torch.int64).contiguous()
        out = torch.empty(ids.shape[0], self.cols, dtype=torch.float32)
        code = KIND_CODES[self.kind]
        _EXT.gather(
            code, self.describe()[0], self.rows, self.cols, ids.data_ptr(), ids.shape[0], out.data_ptr()
        )
        return out


@dataclass(frozen=True, slots=True)
class DecodeLayer:
    attn_norm: npt.NDArray[np.float32]
    ffn_norm: npt.NDArray[np.float32]
    qkv: PackedLinear
    out: PackedLinear
    gate_up: PackedLinear
    down: PackedLinear


@dataclass(frozen=True, slots=True)
class DecodeShape:
    n_heads: int
    n_kv_heads: int
    head_dim: int
    n_ff: int
    eps: float
    #: How many of each row's leading logits are recomputed exactly from the stored rows.
    refine_top: int


class DecodeModel:
    """One C model over the engine's own buffers: token table, weights, final norm, rotary table and
    KV cache.

    It reads them in place, so it holds references to all of them for as long as it lives. ``cache`` is
    ``[layers, 2, kv_heads, blocks, block_size, head_dim]`` bf16 values as their ``uint16`` bit patterns,
    and ``rotations`` the complex64 ``[positions, head_dim / 2]`` table of ``exp(i * position * freq)``.
    """

    def __init__(
        self,
        shape: DecodeShape,
        layers: list[DecodeLayer],
        embed: PackedLinear,
        out_norm: npt.NDArray[np.float32],
        head: PackedLinear,
        rotations: npt.NDArray[np.complex64],
        cache: npt.NDArray[np.uint16],
        isa: int | None = None,
    ) -> None:
        assert _EXT is not None
        if cache.dtype != np.uint16 or cache.ndim != 6 or not cache.flags.c_contiguous:
            raise ValueError("the decode kernels read a contiguous bf16 cache (uint16 bit patterns)")
        if rotations.dtype != np.complex64 or not rotations.flags.c_contiguous:
            raise ValueError("the decode kernels read a contiguous complex64 rotary table")
        self._keep = (layers, embed, out_norm, head, rotations, cache)
        self.shape = shape
        self.dim = int(out_norm.shape[0])
        self.vocab = head.rows
        self.isa = instruction_set() if isa is None else _checked(isa)
        config = (
            *(len(layers), self.dim, shape.n_heads, shape.n_kv_heads, shape.head_dim, shape.n_ff),
            *(shape.eps, shape.refine_top),
        )
        described = [
            (
                _vector(layer.attn_norm),
                _vector(layer.ffn_norm),
                *layer.qkv.describe(),
                *layer.out.describe(),
                *layer.gate_up.describe(),
                *layer.down.describe(),
            )
            for layer in layers
        ]
        self._handle = _EXT.model_new(
            self.isa,
            config,
            described,
            embed.describe(),
            head.describe(),
            _vector(out_norm),
            int(rotations.ctypes.data),
            int(rotations.shape[0]),
            int(cache.ctypes.data),
            int(cache.shape[3]),
            int(cache.shape[4]),
        )

    def step(
        self,
        ids: list[int],
        positions: list[int],
        tables: list[list[int]],
        row_tables: list[int],
        logit_rows: list[int],
        *,
        precise: bool,
    ) -> npt.NDArray[np.float32]:
        """Run every layer for the tokens ``ids``: row ``i`` is the token at ``positions[i]`` of the
        sequence whose cache blocks are ``tables[row_tables[i]]`` (in order). Every row's key and value
        go into the cache first, then each row attends over its sequence up to its own position, so the
        rows of one prompt chunk may share a step. ``precise``: float32 activations (prompt rows) rather
        than 8-bit ones (decode rows).

        Returns the float32 logits [len(logit_rows), vocab] of the rows ``logit_rows``, each row's
        leaders exact. Plain lists, read by the C side directly.
        """
        assert _EXT is not None
        logits = np.empty((len(logit_rows), self.vocab), dtype=np.float32)
        _EXT.step(self._handle, precise, ids, positions, tables, row_tables, logit_rows, logits.ctypes.data)
        return logits

    def logits(self, hidden: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Logits [M, vocab] of final hidden states [M, dim] (normalised), each row's leaders exact."""
        assert _EXT is not None
        hidden = np.ascontiguousarray(hidden, dtype=np.float32)
        out = np.empty((hidden.shape[0], self.vocab), dtype=np.float32)
        _EXT.logits(self._handle, int(hidden.shape[0]), hidden.ctypes.data, out.ctypes.data)
        return out


def _vector(v: npt.NDArray[np.float32]) -> int:
    if v.dtype != np.float32 or v.ndim != 1 or not v.flags.c_contiguous:
        raise ValueError("norm weights must be contiguous float32 vectors")
    return int(v.ctypes.data)
