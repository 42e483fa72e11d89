"""Turning raw GGUF tensors into the weights the torch forward pass multiplies by (the C path builds
its own, in ``_native``).

On CPU, Q4_0, Q4_1 and Q8_0 matrices keep their bytes, rearranged for the C decode kernels
(``PackedLinear``; other block kinds are re-quantised to Q8_0 for them), or, where those kernels are not built, 4-bit ones go to torch's int4 kernel (``Int4Linear``);
everything else becomes a dense matrix in the compute dtype. Projections that read the same input are
concatenated -- Q, K and V into one matrix, gate and up into another -- so each layer does three matmuls
instead of seven.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from accord.engine.local._gguf import ModelFile, RawTensor, UnsupportedModel
from accord.engine.local._heap import release_freed_memory
from accord.engine.local._native import floats, is_quantized, packed_matrix
from accord.kernels import cuda, decode
from accord.kernels.decode import PackedLinear
from accord.kernels.linear import DenseLinear, Int4Linear, Linear, StackedLinear
from accord.kernels.quant import Int4Blocks, QuantKind, dequantize, quantize_int4, split_int4

HEAD_CHUNK_ROWS = 4096


@dataclass(frozen=True, slots=True)
class LayerWeights:
    attn_norm: torch.Tensor
    qkv: Linear
    out: Linear
    ffn_norm: torch.Tensor
    gate_up: Linear
    down: Linear


@dataclass(frozen=True, slots=True)
class ModelWeights:
    embedding: Embedding
    layers: list[LayerWeights]
    norm: torch.Tensor
    head: Linear
    #: float32 rows of the output matrix by token id, for recomputing the top logits exactly.
    head_rows: Callable[[torch.Tensor], torch.Tensor]
    rope_freq_factors: torch.Tensor | None


class Embedding:
    """Token embeddings kept as stored (quantised rows are dequantised when looked up), or packed for
    the C kernels, which then also read the table as the tied output projection."""

    def __init__(self, raw: torch.Tensor, kind: QuantKind | str, packed: PackedLinear | None = None) -> None:
        self.raw = raw
        self.kind = kind
        self.packed = packed

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        if self.packed is not None:
            return self.packed.rows_of(ids)
        rows = self.raw.index_select(0, ids)
        if isinstance(self.kind, QuantKind):
            return dequantize(rows, self.kind)
        return rows.float()


def _tensor(raw: RawTensor, device: torch.device) -> torch.Tensor:
    """A copy of the stored bytes or numbers (quantised kinds stay uint8 blocks)."""
    array = np.array(raw.data)  # a writable copy, out of the file's memory map
    if raw.kind == "BF16":
        return (
            torch.from_numpy(array.view(np.uint16).astype(np.int16))
            .view(torch.bfloat16)
            .to(device, copy=True)
        )
    return torch.from_numpy(array).to(device)


def _embedding(
    raw: RawTensor,
    device: torch.device,
    dtype: torch.dtype,
    packed: bool,
    release: Callable[[], None] | None = None,
) -> Embedding:
    """A table looked up by row: stored rows where they can be dequantised per lookup, else dense;
    packed where ``packed`` and the C kernels run (the stored rows are then not kept; a kind they do
    not read becomes Q8_0, see ``packed_matrix``). ``release`` lets the file pages read so far go."""
    if packed and device.type == "cpu" and decode.available() and is_quantized(raw):
        table = packed_matrix([raw], release)
        return Embedding(torch.empty(0, dtype=torch.uint8), table.kind, table)
    if raw.kind == "OTHER":
        return Embedding(_dense(raw, device).to(dtype), "DENSE")
    return Embedding(_tensor(raw, device).reshape(raw.shape[0], -1), raw.kind)


def _dense(raw: RawTensor, device: torch.device) -> torch.Tensor:
    """float32 matrix of ``raw``."""
    if raw.kind == "OTHER":
        return torch.from_numpy(floats(raw)).reshape(raw.shape).to(device)
    t = _tensor(raw, device)
    if not isinstance(raw.kind, QuantKind):
        return t.float().reshape(raw.shape)
    if device.type == "cuda" and cuda.available():
        return cuda.dequantize(t, raw.kind)
    return dequantize(t, raw.kind)


def make_linear(
    parts: list[RawTensor], device: torch.device, dtype: torch.dtype, *, quantized: bool = True
) -> Linear:
    """One matrix made of ``parts`` stacked by rows (4-bit where ``quantized`` and the device allows)."""
    kinds = {p.kind for p in parts}
    kind = next(iter(kinds))
    if quantized and device.type == "cpu" and decode.available() and all(map(is_quantized, parts)):
        return packed_matrix(parts)
    cpu_blocks = quantized and len(kinds) == 1 and device.type == "cpu" and isinstance(kind, QuantKind)
    if cpu_blocks and kind in (QuantKind.Q4_0, QuantKind.Q4_1):
        assert isinstance(kind, QuantKind)
        raw = torch.cat([_tensor(p, device) for p in parts])
        return Int4Linear(split_int4(raw, kind, dtype))
    return DenseLinear(torch.cat([_dense(p, device).to(dtype) for p in parts]))


def build_weights(
    model: ModelFile, device: torch.device, dtype: torch.dtype, *, quantized: bool = True
) -> ModelWeights:
    """The model's weights on ``device``; ``quantized=False`` makes every matrix dense (as on a GPU)."""
    tensors = model.tensors

    def get(name: str) -> RawTensor:
        if name not in tensors:
            raise UnsupportedModel(f"{model.path.name}: missing tensor {name}")
        return tensors[name]

    def vector(name: str) -> torch.Tensor:
        return _dense(get(name), device).reshape(-1)

    layers = []
    for i in range(model.config.n_layers):
        p = f"blk.{i}."
        layers.append(
            LayerWeights(
                attn_norm=vector(p + "attn_norm.weight"),
                qkv=make_linear(
                    [get(p + "attn_q.weight"), get(p + "attn_k.weight"), get(p + "attn_v.weight")],
                    device,
                    dtype,
                    quantized=quantized,
                ),
                out=make_linear([get(p + "attn_output.weight")], device, dtype, quantized=quantized),
                ffn_norm=vector(p + "ffn_norm.weight"),
                gate_up=make_linear(
                    [get(p + "ffn_gate.weight"), get(p + "ffn_up.weight")], device, dtype, quantized=quantized
                ),
                down=make_linear([get(p + "ffn_down.weight")], device, dtype, quantized=quantized),
            )
        )
        release_freed_memory()
        model.drop_resident_pages()
    factors = tensors.get("rope_freqs.weight")
    embd = get("token_embd.weight")
    # The token table is the largest matrix: its file pages go as it is packed, not after.
    embedding = _embedding(embd, device, dtype, quantized, model.drop_resident_pages)
    output = tensors.get("output.weight")
    # Without an output matrix the model reuses the embedding table, whose stored rows are exact.
    rows = (
        embedding
        if output is None
        else _embedding(output, device, dtype, quantized, model.drop_resident_pages)
    )
    return ModelWeights(
        embedding=embedding,
        layers=layers,
        norm=vector("output_norm.weight"),
        head=_head(embd if output is None else output, rows, device, dtype, quantized),
        head_rows=rows.lookup,
        rope_freq_factors=None if factors is None else vector(factors.name),
    )


def _head(
    raw: RawTensor, rows: Embedding, device: torch.device, dtype: torch.dtype, quantized: bool
) -> Linear:
    """The output projection the forward pass multiplies by: on CPU, 4 bits a weight.

    It only has to rank the vocabulary well enough that the true best tokens are among the leaders,
    whose logits the model then recomputes from the exact stored rows (``LlamaModel._refine``). At 4
    bits the projection reads a quarter of what bf16 would, and it is the largest matrix of a small model.
    Where the C kernels read the stored kind, the projection is the stored table itself.
    """
    if device.type != "cpu" or not quantized:
        return make_linear([raw], device, dtype, quantized=False)
    if rows.packed is not None:
        return rows.packed  # the lookup table itself: no second copy
    parts: list[Linear] = []
    for begin in range(0, raw.shape[0], HEAD_CHUNK_ROWS):
        ids = torch.arange(begin, min(begin + HEAD_CHUNK_ROWS, raw.shape[0]))
        if raw.kind in (QuantKind.Q4_0, QuantKind.Q4_1):
            assert isinstance(raw.kind, QuantKind)
            blocks = split_int4(rows.raw.index_select(0, ids), raw.kind, dtype)
        else:  # a quarter of a piece at a time: the float32 temporaries are the load's memory peak
            quarters = [quantize_int4(rows.lookup(q), dtype) for q in ids.chunk(4)]
            blocks = Int4Blocks(*(torch.cat(field) for field in zip(*quarters, strict=True)))
        parts.append(Int4Linear(blocks, dense_path=False))
        release_freed_memory()
    return StackedLinear(parts)
