# Types of the C extension built from accord/kernels/csrc (module.c). Addresses are data_ptr() values.
from collections.abc import Sequence
from typing import Any

def cpu_isas() -> tuple[int, ...]: ...
def set_threads(n: int, /) -> int: ...
def threads() -> int: ...
def packed_size(kind: int, rows: int, cols: int, /) -> int: ...
def pack(kind: int, raw: int, rows: int, cols: int, out: int, /) -> None: ...
def unpack(kind: int, packed: int, rows: int, cols: int, out: int, /) -> None: ...
def gather(kind: int, packed: int, rows: int, cols: int, ids: int, n: int, out: int, /) -> None: ...
def product(
    isa: int, packed: int, kind: int, rows: int, cols: int, x: int, m: int, out: int, precise: int, /
) -> None: ...
def model_new(
    isa: int,
    config: tuple[int, int, int, int, int, int, float, int],
    layers: Sequence[tuple[int, ...]],
    embed: tuple[int, int, int, int],
    head: tuple[int, int, int, int],
    out_norm: int,
    rope: int,
    max_pos: int,
    kv: int,
    n_blocks: int,
    block_size: int,
    /,
) -> Any: ...
def step(
    model: Any,
    precise: bool,
    ids: list[int],
    positions: list[int],
    tables: list[list[int]],
    row_tables: list[int],
    logit_rows: list[int],
    logits: int,
    /,
) -> None: ...
def logits(model: Any, rows: int, hidden: int, out: int, /) -> None: ...
def sample(
    logits: int, rows: int, vocab: int, params: list[tuple[float, float, int, int, int]], /
) -> list[int]: ...
