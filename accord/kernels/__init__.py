"""Numeric ops for the embedded engine: dequantisation, norms, rotary embedding, paged attention, sampling.

Written for torch (CPU, and CUDA when present); :mod:`accord.kernels.cuda` holds cupy kernels for
dequantisation and sampling, imported only where a GPU is used.
"""

from accord.kernels.attention import decode_attention, prefill_attention, write_kv
from accord.kernels.linear import DenseLinear, Int4Linear, Linear, StackedLinear
from accord.kernels.norm import rms_norm
from accord.kernels.quant import (
    Int4Blocks,
    QuantKind,
    dequantize,
    dequantize_int4,
    quantize_int4,
    split_int4,
    unpack_int4,
)
from accord.kernels.rotary import RotaryTable, apply_rotary
from accord.kernels.sampling import SamplingRow, filter_logits, sample

__all__ = [
    "DenseLinear",
    "Int4Blocks",
    "Int4Linear",
    "Linear",
    "QuantKind",
    "RotaryTable",
    "SamplingRow",
    "StackedLinear",
    "apply_rotary",
    "decode_attention",
    "dequantize",
    "dequantize_int4",
    "filter_logits",
    "prefill_attention",
    "quantize_int4",
    "rms_norm",
    "sample",
    "split_int4",
    "unpack_int4",
    "write_kv",
]
