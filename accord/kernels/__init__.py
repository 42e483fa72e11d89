"""Numeric ops for the embedded engine.

:mod:`accord.kernels.decode` runs a whole decode step in C (``csrc/``) over numpy buffers, and is what a
CPU uses wherever it was built; it, :mod:`accord.kernels.kinds` and :mod:`accord.kernels.noise` import
no torch, so a server on that path never loads it. The rest is the torch path (a GPU, a float model, an
install without the C kernels): dequantisation, norms, rotary embedding, paged attention and sampling,
with :mod:`accord.kernels.cuda` holding cupy kernels imported only where a GPU is used.

The names below are loaded when first read (PEP 562), so importing one torch-free submodule does not
import the torch ones through this package.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "DenseLinear": "linear",
    "Int4Blocks": "quant",
    "Int4Linear": "linear",
    "Linear": "linear",
    "QuantKind": "kinds",
    "RotaryTable": "rotary",
    "SamplingRow": "noise",
    "StackedLinear": "linear",
    "apply_rotary": "rotary",
    "decode_attention": "attention",
    "dequantize": "quant",
    "dequantize_int4": "quant",
    "filter_logits": "sampling",
    "prefill_attention": "attention",
    "quantize_int4": "quant",
    "rms_norm": "norm",
    "sample": "sampling",
    "split_int4": "quant",
    "unpack_int4": "quant",
    "write_kv": "attention",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
