# Types of the C extension built from accord/kernels/csrc (module.c). Addresses are data_ptr() values.
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
    layers: list[tuple[int, ...]],
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
    precise: int,
    rows: int,
    x: int,
    positions: int,
    tables: int,
    table_stride: int,
    row_tables: int,
    logit_rows: int,
    n_logits: int,
    logits: int,
    /,
) -> None: ...
def logits(model: Any, rows: int, hidden: int, out: int, /) -> None: ...
