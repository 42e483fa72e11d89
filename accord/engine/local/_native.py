"""The embedded engine's C path: a model whose every matrix the C kernels read, held in numpy buffers.

A step is one call into the kernels per kind of row (``accord.kernels.decode``): prompt rows with
float32 activations against the weights' exact values, then decode rows with 8-bit activations, each
part as it would run alone. Nothing here imports torch, and neither does anything a server on this
path loads: torch's import alone is about 210 MiB resident, more than twice SmolLM2's weights. Where a
model does not fit (a float matrix, a shape the kernels do not take, no kernels built) the engine runs
the torch path of ``_model`` instead; :func:`unfit` says why.
"""

from __future__ import annotations

from collections.abc import Callable

import gguf
import numpy as np
import numpy.typing as npt

from accord.engine.local._blocks import NativeCache
from accord.engine.local._gguf import LlamaConfig, ModelFile, RawTensor, UnsupportedModel
from accord.engine.local._heap import release_freed_memory
from accord.engine.local._rows import StepRows, build_rows
from accord.engine.local._scheduler import Work
from accord.kernels import decode
from accord.kernels.decode import DecodeLayer, DecodeModel, DecodeShape, PackedLinear
from accord.kernels.kinds import QuantKind
from accord.kernels.noise import SamplingRow

#: How many of each row's leading logits are recomputed exactly from the stored rows (see ``_model``).
REFINE_TOP = 128
#: The one block size the kernels take: a block's keys are one vector of 16 positions per dimension.
BLOCK_SIZE = 16
_LAYER_MATRICES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


def is_quantized(raw: RawTensor) -> bool:
    """Stored below 16 bits a weight: a GGML block kind (float matrices are left as they are)."""
    return isinstance(raw.kind, QuantKind) or raw.kind == "OTHER"


def unfit(model: ModelFile, block_size: int) -> str | None:
    """Why ``model`` cannot run on the C step in this process (None: it can)."""
    if not decode.built():
        return "the C kernels are not built in this install (no C compiler when it was installed)"
    if not decode.available():
        return "ACCORD_C_KERNELS switches them off"
    cfg, tensors = model.config, model.tensors
    names = [f"blk.{i}.{m}.weight" for i in range(cfg.n_layers) for m in _LAYER_MATRICES]
    names += ["token_embd.weight", *(["output.weight"] if "output.weight" in tensors else [])]
    if not all(name in tensors and is_quantized(tensors[name]) for name in names):
        return "a float matrix (F16, BF16 or F32: kept as stored, not quantised)"
    if cfg.head_dim % 32 or cfg.head_dim > 256 or cfg.n_embd % 32 or cfg.n_ff % 32:
        return "a shape the C kernels do not take (heads a multiple of 32 wide up to 256)"
    if cfg.n_heads % cfg.n_kv_heads or cfg.n_heads // cfg.n_kv_heads > 8:  # csrc MAX_GROUP
        return "more than 8 query heads a KV head"
    if block_size != BLOCK_SIZE:
        return f"a cache block of {block_size} positions (the kernels take {BLOCK_SIZE})"
    return None


def packed_matrix(parts: list[RawTensor], release: Callable[[], None] | None = None) -> PackedLinear:
    """``parts`` stacked by rows for the C kernels: as stored where they all are one kind the kernels
    read, else re-quantised to Q8_0 (K-quants, Q5 and the other kinds, or a mix of kinds, which one
    matrix cannot hold). Q8_0 is finer than any of those, so the re-quantisation adds little error, and
    it doubles a 4-bit matrix's size. ``release`` lets the file pages read so far go, chunk by chunk."""
    kinds = {p.kind for p in parts}
    kind = next(iter(kinds))
    if len(kinds) == 1 and isinstance(kind, QuantKind) and decode.supports(kind):
        # Packed straight from the file's memory map (a single part needs no copy at all).
        views = [np.asarray(p.data).reshape(p.shape[0], -1) for p in parts]
        return PackedLinear(views[0] if len(views) == 1 else np.concatenate(views), kind, after_chunk=release)
    q8 = gguf.GGMLQuantizationType.Q8_0
    blocks = [gguf.quants.quantize(floats(p).reshape(p.shape), q8) for p in parts]
    rows = sum(p.shape[0] for p in parts)
    return PackedLinear(np.ascontiguousarray(np.concatenate(blocks)).reshape(rows, -1), QuantKind.Q8_0)


def floats(raw: RawTensor) -> npt.NDArray[np.float32]:
    """The float32 values of ``raw``, flat, exactly as ggml defines its kind."""
    data = np.asarray(raw.data)
    if raw.kind == "BF16":
        bits = data.view(np.uint16).astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32).reshape(-1)
    if raw.kind in ("F32", "F16"):
        return data.astype(np.float32).reshape(-1)
    values = gguf.quants.dequantize(data, gguf.GGMLQuantizationType(raw.ggml_type))
    return np.ascontiguousarray(values, dtype=np.float32).reshape(-1)


def rotations(
    head_dim: int, base: float, positions: int, scale: float, factors: npt.NDArray[np.float32] | None
) -> npt.NDArray[np.complex64]:
    """``exp(i * position * frequency)`` [positions, head_dim / 2], complex64, for rotating adjacent
    pairs as GGUF's Q and K rows are laid out (see ``accord.kernels.rotary``); angles in float32 as the
    torch path makes them, their sines and cosines in float64 and then rounded."""
    exponents = np.arange(0, head_dim, 2, dtype=np.float64) / head_dim
    inv_freq = (1.0 / base**exponents).astype(np.float32)
    if factors is not None:
        inv_freq = (inv_freq / factors.astype(np.float32)).astype(np.float32)
    angles = np.outer(np.arange(positions, dtype=np.float32) / np.float32(scale), inv_freq).astype(np.float64)
    table = np.empty(angles.shape, dtype=np.complex64)
    table.real, table.imag = np.cos(angles), np.sin(angles)
    return table


class NativeModel:
    """The forward pass on the C step, over a model file's weights and a paged bf16 cache."""

    def __init__(self, config: LlamaConfig, decoder: DecodeModel, cache: NativeCache) -> None:
        self.config = config
        self.decoder = decoder
        self.cache = cache

    @classmethod
    def build(cls, model: ModelFile, num_blocks: int, max_positions: int) -> NativeModel:
        """The weights of ``model`` packed for the kernels (its file pages let go layer by layer) and a
        cache of ``num_blocks`` blocks; raises ``UnsupportedModel`` for a missing tensor."""
        cfg, tensors = model.config, model.tensors

        def get(name: str) -> RawTensor:
            if name not in tensors:
                raise UnsupportedModel(f"{model.path.name}: missing tensor {name}")
            return tensors[name]

        def matrix(*names: str) -> PackedLinear:
            return packed_matrix([get(name) for name in names])

        layers = []
        for i in range(cfg.n_layers):
            p = f"blk.{i}."
            layers.append(
                DecodeLayer(
                    attn_norm=floats(get(p + "attn_norm.weight")),
                    ffn_norm=floats(get(p + "ffn_norm.weight")),
                    qkv=matrix(p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"),
                    out=matrix(p + "attn_output.weight"),
                    gate_up=matrix(p + "ffn_gate.weight", p + "ffn_up.weight"),
                    down=matrix(p + "ffn_down.weight"),
                )
            )
            release_freed_memory()
            model.drop_resident_pages()
        # The token table is the largest matrix: its file pages go as it is packed, not after.
        table = packed_matrix([get("token_embd.weight")], model.drop_resident_pages)
        output = tensors.get("output.weight")
        # Without an output matrix the model reuses the token table, as the file means it to.
        head = table if output is None else packed_matrix([output], model.drop_resident_pages)
        factors = tensors.get("rope_freqs.weight")
        rotary = rotations(
            cfg.head_dim,
            cfg.rope_base,
            max_positions,
            cfg.rope_scale,
            None if factors is None else floats(factors),
        )
        cache = NativeCache(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, num_blocks, BLOCK_SIZE)
        shape = DecodeShape(cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.n_ff, cfg.norm_eps, REFINE_TOP)
        norm = floats(get("output_norm.weight"))
        return cls(cfg, DecodeModel(shape, layers, table, norm, head, rotary, cache.data), cache)

    def batch(self, work: list[Work]) -> StepRows:
        return build_rows(work, self.cache.block_size)

    def forward(self, rows: StepRows) -> npt.NDArray[np.float32]:
        """float32 logits [len(rows.logit_rows), vocab]: prompt rows (float32 activations), then decode
        rows (8-bit), each part alone."""
        split = rows.prompt_rows
        parts = []
        if split:
            logit_rows = [r for r in rows.logit_rows if r < split]
            parts.append(self._rows(rows, 0, split, logit_rows, precise=True))
        if len(rows.token_ids) > split:
            parts.append(self._rows(rows, split, len(rows.token_ids), None, precise=False))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def sample(self, logits: npt.NDArray[np.float32], rows: list[SamplingRow]) -> list[int]:
        return decode.sample(logits, rows)

    def _rows(
        self, rows: StepRows, begin: int, end: int, logit_rows: list[int] | None, *, precise: bool
    ) -> npt.NDArray[np.float32]:
        """Rows ``begin:end`` through the C step: the logits of ``logit_rows`` (all rows when None)."""
        wanted = list(range(end - begin)) if logit_rows is None else [r - begin for r in logit_rows]
        return self.decoder.step(
            rows.token_ids[begin:end],
            rows.positions[begin:end],
            rows.tables,
            rows.row_tables[begin:end],
            wanted,
            precise=precise,
        )
