"""Reading GGUF model files: the key/value header, the tensor directory, and what both engines take from them.

One reader for the whole server. The remote engine and the template layer need only the header (the
chat template, the vocabulary); the embedded engine also needs the tensors. Both come from one walk over
the file with ``struct`` over a memory map: the ``gguf`` package's own reader builds a numpy view per
array element, which took 1.4 s for SmolLM2's 49k-token vocabulary against about 0.1 s here.

Tensors are handed out as numpy views of the map, so nothing is copied until a loader converts them,
and the map can be dropped as soon as the weights are built.

Format (GGUF v2 and v3, little-endian): magic, version, tensor count, key/value count; the key/value
pairs; one record per tensor (name, dimensions innermost first, GGML type, offset); padding to the file's
alignment; the tensor data, each tensor at its offset from there.
"""

from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accord.errors import AccordError

if TYPE_CHECKING:
    import numpy as np


class UnsupportedModel(AccordError):
    """The file is not a model this server can run or rebuild a tokenizer for."""


# GGUF value types -> struct format of one scalar (8: string, 9: array).
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_DEFAULT_ALIGNMENT = 32

# GGML types by number, with (weights per block, bytes per block); from ggml's type table.
F32, F16, BF16 = 0, 1, 30
_BLOCKS: dict[int, tuple[int, int]] = {
    0: (1, 4),  # F32
    1: (1, 2),  # F16
    2: (32, 18),  # Q4_0
    3: (32, 20),  # Q4_1
    6: (32, 22),  # Q5_0
    7: (32, 24),  # Q5_1
    8: (32, 34),  # Q8_0
    9: (32, 36),  # Q8_1
    10: (256, 84),  # Q2_K
    11: (256, 110),  # Q3_K
    12: (256, 144),  # Q4_K
    13: (256, 176),  # Q5_K
    14: (256, 210),  # Q6_K
    15: (256, 292),  # Q8_K
    16: (256, 66),  # IQ2_XXS
    17: (256, 74),  # IQ2_XS
    18: (256, 98),  # IQ3_XXS
    19: (256, 50),  # IQ1_S
    20: (32, 18),  # IQ4_NL
    21: (256, 110),  # IQ3_S
    22: (256, 82),  # IQ2_S
    23: (256, 136),  # IQ4_XS
    29: (256, 56),  # IQ1_M
    30: (1, 2),  # BF16
    34: (256, 54),  # TQ1_0
    35: (256, 66),  # TQ2_0
}


@dataclass(frozen=True, slots=True)
class TensorRecord:
    """One tensor as the file stores it."""

    name: str
    ggml_type: int
    #: Torch order: the last dimension is the contiguous one ([rows, cols] for a matrix).
    shape: tuple[int, ...]
    #: A view of the file's bytes: float32 / float16 for those types, else uint8 ``[rows, row_bytes]``.
    data: np.ndarray[Any, Any]


@dataclass(frozen=True, slots=True)
class GGUFContents:
    path: Path
    metadata: dict[str, Any]
    tensors: dict[str, TensorRecord] = field(default_factory=dict)
    _map: mmap.mmap | None = None

    def drop_resident_pages(self) -> None:
        """Let the kernel drop the pages read so far from this process (they stay in the page cache).

        Pages of a file mapping count as resident memory once touched; without this, building the
        weights would hold the whole file resident on top of the weights built from it.
        """
        if self._map is not None and not self._map.closed and hasattr(mmap, "MADV_DONTNEED"):
            self._map.madvise(mmap.MADV_DONTNEED)


def read_gguf_metadata(path: Path) -> dict[str, Any]:
    """The key/value header of a GGUF file, read without touching its tensors."""
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return _Header(data, path).metadata()


def read_gguf(path: Path) -> GGUFContents:
    """Header and tensor directory; the tensors are views of a read-only map that lives as long as they do.

    numpy comes with the ``[local]`` extra; only the embedded engine reads tensors, so it is imported here.
    """
    import numpy as np

    with path.open("rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    header = _Header(data, path)
    metadata = header.metadata()
    records = header.tensor_records()
    alignment = int(metadata.get("general.alignment", _DEFAULT_ALIGNMENT))
    base = -(-header.pos // alignment) * alignment
    whole = np.frombuffer(data, dtype=np.uint8)
    tensors = {}
    for name, dims, ggml_type, offset in records:
        if ggml_type not in _BLOCKS:
            raise UnsupportedModel(f"{path.name}: tensor {name} has GGML type {ggml_type}")
        per_block, block_bytes = _BLOCKS[ggml_type]
        shape = tuple(reversed(dims))
        cols = shape[-1]
        rows = math.prod(shape[:-1])
        if cols % per_block:
            raise UnsupportedModel(f"{path.name}: tensor {name} rows do not fill whole blocks")
        row_bytes = cols // per_block * block_bytes
        raw = whole[base + offset : base + offset + rows * row_bytes]
        view: np.ndarray[Any, Any]
        if ggml_type == F32:
            view = raw.view(np.float32).reshape(shape)
        elif ggml_type == F16:
            view = raw.view(np.float16).reshape(shape)
        else:
            view = raw.reshape(rows, row_bytes)
        tensors[name] = TensorRecord(name, ggml_type, shape, view)
    return GGUFContents(path, metadata, tensors, data)


class _Header:
    def __init__(self, data: mmap.mmap, path: Path) -> None:
        if data[:4] != b"GGUF":
            raise UnsupportedModel(f"{path} is not a GGUF file")
        version, self.n_tensors, self.n_kv = struct.unpack_from("<IQQ", data, 4)
        if version not in (2, 3):
            raise UnsupportedModel(f"{path}: GGUF version {version} is not supported")
        self.data, self.pos = data, 24

    def _string(self) -> str:
        (size,) = struct.unpack_from("<Q", self.data, self.pos)
        end = self.pos + 8 + size
        text = self.data[self.pos + 8 : end].decode("utf-8", errors="replace")
        self.pos = end
        return text

    def _value(self, kind: int) -> Any:
        if kind == 8:
            return self._string()
        if kind == 9:
            item, count = struct.unpack_from("<IQ", self.data, self.pos)
            self.pos += 12
            if item in _SCALARS:
                fmt = f"<{count}{_SCALARS[item]}"
                values = list(struct.unpack_from(fmt, self.data, self.pos))
                self.pos += struct.calcsize(fmt)
                return values
            return [self._value(item) for _ in range(count)]
        fmt = "<" + _SCALARS[kind]
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        for _ in range(self.n_kv):
            key = self._string()
            (kind,) = struct.unpack_from("<I", self.data, self.pos)
            self.pos += 4
            meta[key] = self._value(kind)
        return meta

    def tensor_records(self) -> list[tuple[str, tuple[int, ...], int, int]]:
        """(name, dimensions innermost first, GGML type, offset) of every tensor; after ``metadata``."""
        out = []
        for _ in range(self.n_tensors):
            name = self._string()
            (n_dims,) = struct.unpack_from("<I", self.data, self.pos)
            dims = struct.unpack_from(f"<{n_dims}Q", self.data, self.pos + 4)
            self.pos += 4 + 8 * n_dims
            ggml_type, offset = struct.unpack_from("<IQ", self.data, self.pos)
            self.pos += 12
            out.append((name, tuple(int(d) for d in dims), int(ggml_type), int(offset)))
        return out


@dataclass(frozen=True, slots=True)
class TokenizerData:
    """The vocabulary a GGUF file stores (``tokenizer.ggml.*``) and its chat template."""

    model: str
    pre: str
    tokens: list[str]
    token_types: list[int]
    merges: list[str]
    bos_id: int | None
    eos_id: int | None
    eot_id: int | None
    chat_template: str | None

    def token_text(self, token_id: int | None) -> str:
        return self.tokens[token_id] if token_id is not None and 0 <= token_id < len(self.tokens) else ""


def tokenizer_data(meta: dict[str, Any]) -> TokenizerData:
    tokens = list(meta.get("tokenizer.ggml.tokens", []))

    def token_id(key: str) -> int | None:
        value = meta.get(f"tokenizer.ggml.{key}")
        return value if isinstance(value, int) else None

    template = meta.get("tokenizer.chat_template")
    return TokenizerData(
        model=str(meta.get("tokenizer.ggml.model", "")),
        pre=str(meta.get("tokenizer.ggml.pre") or "default"),
        tokens=tokens,
        token_types=[int(t) for t in meta.get("tokenizer.ggml.token_type", [1] * len(tokens))],
        merges=list(meta.get("tokenizer.ggml.merges", [])),
        bos_id=token_id("bos_token_id"),
        eos_id=token_id("eos_token_id"),
        eot_id=token_id("eot_token_id"),
        chat_template=template if isinstance(template, str) else None,
    )
