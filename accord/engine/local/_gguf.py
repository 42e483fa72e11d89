"""A Llama-family GGUF file as the embedded engine reads it: hyperparameters, tokenizer data, raw tensors.

The file is read by :mod:`accord.engine.model_files` (the one reader the server has); this module checks
that the model is one the engine runs and turns the header into its configuration. Tensors are views of
the file's memory map, copied by whoever converts them, so the map can be dropped once the weights are
built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gguf
import numpy as np

from accord.engine.generation_defaults import GenerationDefaults, generation_defaults
from accord.engine.model_files import TokenizerData, UnsupportedModel, read_gguf, tokenizer_data
from accord.kernels.kinds import QuantKind

__all__ = ["LlamaConfig", "ModelFile", "RawTensor", "TokenizerData", "UnsupportedModel", "read_model_file"]


@dataclass(frozen=True, slots=True)
class LlamaConfig:
    n_layers: int
    n_embd: int
    n_ff: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    rope_base: float
    rope_scale: float
    norm_eps: float
    context_length: int
    vocab_size: int


@dataclass(frozen=True, slots=True)
class RawTensor:
    """One tensor as stored.

    ``kind`` is a :class:`QuantKind` (kept quantised), "F32" / "F16" / "BF16", or "OTHER": any other
    type the gguf package can dequantise (K-quants and the rest), which the loader turns dense.
    """

    name: str
    kind: QuantKind | str
    #: [rows, cols] for matrices, [n] for vectors (torch order: the last dimension is contiguous).
    shape: tuple[int, ...]
    data: np.ndarray[Any, Any]
    #: The GGML type number as stored.
    ggml_type: int = 0


_OPENAI_DEFAULTS = GenerationDefaults()


@dataclass(frozen=True, slots=True)
class ModelFile:
    path: Path
    name: str
    config: LlamaConfig
    tokenizer: TokenizerData
    tensors: dict[str, RawTensor]
    #: Drops the file pages read so far from this process's resident memory.
    drop_resident_pages: Callable[[], None] = lambda: None
    generation: GenerationDefaults = _OPENAI_DEFAULTS


_KINDS: dict[int, QuantKind | str] = {
    gguf.GGMLQuantizationType.Q4_0: QuantKind.Q4_0,
    gguf.GGMLQuantizationType.Q4_1: QuantKind.Q4_1,
    gguf.GGMLQuantizationType.Q8_0: QuantKind.Q8_0,
    gguf.GGMLQuantizationType.F32: "F32",
    gguf.GGMLQuantizationType.F16: "F16",
    gguf.GGMLQuantizationType.BF16: "BF16",
}

# Types the gguf package dequantises (in numpy, at load time) beyond the ones kept as they are.
_DEQUANTIZABLE = frozenset(
    int(t)
    for t in gguf.GGMLQuantizationType
    if t.name.startswith(("Q", "IQ", "TQ")) and t in gguf.GGML_QUANT_SIZES
)


def read_model_file(path: Path) -> ModelFile:
    contents = read_gguf(path)
    meta = contents.metadata
    arch = meta.get("general.architecture")
    if arch != "llama":
        raise UnsupportedModel(f"{path.name}: architecture {arch!r} is not supported (only 'llama')")

    def hp(key: str, default: Any = None) -> Any:
        value = meta.get(f"{arch}.{key}", default)
        if value is None:
            raise UnsupportedModel(f"{path.name}: missing {arch}.{key}")
        return value

    tokenizer = tokenizer_data(meta)
    n_embd, n_heads = int(hp("embedding_length")), int(hp("attention.head_count"))
    head_dim = int(hp("attention.key_length", n_embd // n_heads))
    rope_dim = int(hp("rope.dimension_count", head_dim))
    if rope_dim != head_dim:
        raise UnsupportedModel(f"{path.name}: partial rotary embeddings are not supported")
    scaling = meta.get(f"{arch}.rope.scaling.type", "none")
    if scaling not in ("none", "linear"):
        raise UnsupportedModel(f"{path.name}: rope scaling {scaling!r} is not supported")
    config = LlamaConfig(
        n_layers=int(hp("block_count")),
        n_embd=n_embd,
        n_ff=int(hp("feed_forward_length")),
        n_heads=n_heads,
        n_kv_heads=int(hp("attention.head_count_kv", n_heads)),
        head_dim=head_dim,
        rope_base=float(hp("rope.freq_base", 10000.0)),
        rope_scale=float(hp("rope.scaling.factor", 1.0)) if scaling == "linear" else 1.0,
        norm_eps=float(hp("attention.layer_norm_rms_epsilon")),
        context_length=int(hp("context_length")),
        vocab_size=int(hp("vocab_size", len(tokenizer.tokens))),
    )
    tensors: dict[str, RawTensor] = {}
    for t in contents.tensors.values():
        kind = _KINDS.get(t.ggml_type)
        if kind is None:
            if t.ggml_type not in _DEQUANTIZABLE:
                raise UnsupportedModel(f"{path.name}: tensor {t.name} has GGML type {t.ggml_type}")
            kind = "OTHER"
        tensors[t.name] = RawTensor(t.name, kind, t.shape, t.data, t.ggml_type)
    return ModelFile(
        path=path,
        name=str(meta.get("general.name") or path.stem),
        config=config,
        tokenizer=tokenizer,
        tensors=tensors,
        drop_resident_pages=contents.drop_resident_pages,
        generation=generation_defaults(meta),
    )
