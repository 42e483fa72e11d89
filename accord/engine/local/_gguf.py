"""Reading a Llama-family GGUF file: hyperparameters, tokenizer data and raw tensors.

The reader memory-maps the file; tensors are handed out as views of that map and copied by whoever
converts them, so the map can be dropped as soon as the weights are built.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gguf
import numpy as np

from accord.errors import AccordError
from accord.kernels.quant import QuantKind


class UnsupportedModel(AccordError):
    """The file is not a model this engine can run."""


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
class TokenizerData:
    model: str
    pre: str
    tokens: list[str]
    token_types: list[int]
    merges: list[str]
    bos_id: int | None
    eos_id: int | None
    eot_id: int | None
    chat_template: str | None


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


@dataclass(frozen=True, slots=True)
class ModelFile:
    path: Path
    name: str
    config: LlamaConfig
    tokenizer: TokenizerData
    tensors: dict[str, RawTensor]
    #: Drops the file pages read so far from this process's resident memory (see ``_Reader``).
    drop_resident_pages: Callable[[], None] = lambda: None


_KINDS: dict[Any, QuantKind | str] = {
    gguf.GGMLQuantizationType.Q4_0: QuantKind.Q4_0,
    gguf.GGMLQuantizationType.Q4_1: QuantKind.Q4_1,
    gguf.GGMLQuantizationType.Q8_0: QuantKind.Q8_0,
    gguf.GGMLQuantizationType.F32: "F32",
    gguf.GGMLQuantizationType.F16: "F16",
    gguf.GGMLQuantizationType.BF16: "BF16",
}


class _Reader(gguf.GGUFReader):
    """``GGUFReader`` over a plain ndarray view of its memory map.

    The reader slices its buffer once per vocabulary entry; slicing an ``np.memmap`` runs Python code
    per slice, which made opening a 49k-token vocabulary take seconds. The view shares the same pages.
    """

    @property  # type: ignore[override]
    def data(self) -> np.ndarray[Any, Any]:
        return self._plain

    @data.setter
    def data(self, value: np.ndarray[Any, Any]) -> None:
        self._plain = value.view(np.ndarray)
        self._map = getattr(value, "_mmap", None)

    def drop_resident_pages(self) -> None:
        """Let the kernel drop the pages read so far from this process (they stay in the page cache).

        Pages of a file mapping count as resident memory once touched; without this, building the
        weights would hold the whole file resident on top of the weights built from it.
        """
        if isinstance(self._map, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
            self._map.madvise(mmap.MADV_DONTNEED)


# Types the gguf package dequantises (in numpy, at load time) beyond the ones kept as they are.
_DEQUANTIZABLE = frozenset(
    t
    for t in gguf.GGMLQuantizationType
    if t.name.startswith(("Q", "IQ", "TQ")) and t in gguf.GGML_QUANT_SIZES
)


def _field(reader: gguf.GGUFReader, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def read_model_file(path: Path) -> ModelFile:
    reader = _Reader(str(path))
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise UnsupportedModel(f"{path.name}: architecture {arch!r} is not supported (only 'llama')")

    def hp(key: str, default: Any = None) -> Any:
        value = _field(reader, f"{arch}.{key}", default)
        if value is None:
            raise UnsupportedModel(f"{path.name}: missing {arch}.{key}")
        return value

    tokens = list(_field(reader, "tokenizer.ggml.tokens", []))
    n_embd, n_heads = int(hp("embedding_length")), int(hp("attention.head_count"))
    head_dim = int(hp("attention.key_length", n_embd // n_heads))
    rope_dim = int(hp("rope.dimension_count", head_dim))
    if rope_dim != head_dim:
        raise UnsupportedModel(f"{path.name}: partial rotary embeddings are not supported")
    scaling = _field(reader, f"{arch}.rope.scaling.type", "none")
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
        vocab_size=int(hp("vocab_size", len(tokens))),
    )

    def token_id(key: str) -> int | None:
        value = _field(reader, f"tokenizer.ggml.{key}")
        return None if value is None else int(value)

    tokenizer = TokenizerData(
        model=str(_field(reader, "tokenizer.ggml.model", "")),
        pre=str(_field(reader, "tokenizer.ggml.pre", "default")),
        tokens=tokens,
        token_types=[int(t) for t in _field(reader, "tokenizer.ggml.token_type", [1] * len(tokens))],
        merges=list(_field(reader, "tokenizer.ggml.merges", [])),
        bos_id=token_id("bos_token_id"),
        eos_id=token_id("eos_token_id"),
        eot_id=token_id("eot_token_id"),
        chat_template=_field(reader, "tokenizer.chat_template"),
    )

    tensors: dict[str, RawTensor] = {}
    for t in reader.tensors:
        kind = _KINDS.get(t.tensor_type)
        if kind is None:
            if t.tensor_type not in _DEQUANTIZABLE:
                raise UnsupportedModel(f"{path.name}: tensor {t.name} has type {t.tensor_type.name}")
            kind = "OTHER"
        shape = tuple(int(n) for n in reversed(t.shape.tolist()))
        tensors[t.name] = RawTensor(t.name, kind, shape, t.data, int(t.tensor_type))
    name = str(_field(reader, "general.name") or path.stem)
    return ModelFile(
        path=path,
        name=name,
        config=config,
        tokenizer=tokenizer,
        tensors=tensors,
        drop_resident_pages=reader.drop_resident_pages,
    )
