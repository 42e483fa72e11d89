"""cupy kernels for a GPU: dequantisation of GGML blocks and Gumbel-max sampling.

cupy is optional and imported only when a kernel is first used; :func:`available` says whether these
kernels can run here at all. Tensors cross between torch and cupy through DLPack, without copies.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from accord.kernels.quant import QuantKind

_SOURCE = r"""
#define NEG_INF __int_as_float(0xff800000)
// fp16 bits -> float, done by hand so the source needs no CUDA headers.
__device__ float half_bits(unsigned int h) {
    unsigned int sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (exp == 0) {
        float v = man * 5.9604644775390625e-8f;  // subnormal: man * 2^-24
        return sign ? -v : v;
    }
    if (exp == 31) return __int_as_float(sign | 0x7F800000u | (man << 13));
    return __int_as_float(sign | ((exp + 112u) << 23) | (man << 13));
}

__device__ float field(const unsigned char* p) { return half_bits(p[0] | (p[1] << 8)); }

extern "C" __global__ void dequant(const unsigned char* raw, float* out, long long n, int kind) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long b = i >> 5;
    int j = (int)(i & 31);
    if (kind == 2) {  // Q8_0
        const unsigned char* blk = raw + b * 34;
        out[i] = field(blk) * (float)(signed char)blk[2 + j];
        return;
    }
    const unsigned char* blk = raw + b * (kind == 0 ? 18 : 20);
    const unsigned char* qs = blk + (kind == 0 ? 2 : 4);
    unsigned int byte = qs[j & 15];
    float q = (float)(j < 16 ? (byte & 15u) : (byte >> 4));
    // Rounded multiply then add, as numpy does it: a fused multiply-add would round differently.
    out[i] = kind == 0 ? field(blk) * (q - 8.0f) : __fadd_rn(__fmul_rn(field(blk), q), field(blk + 2));
}

__device__ unsigned long long splitmix(unsigned long long z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// One block per row: argmax of logits / T + Gumbel(seed, step, index); plain argmax where T <= 0.
// Ties go to the lowest index, as torch.argmax does.
extern "C" __global__ void gumbel_argmax(const float* logits, const float* temperature,
        const unsigned long long* seeds, const long long* steps, long long* out, int vocab) {
    __shared__ float best_v[256];
    __shared__ int best_i[256];
    int row = blockIdx.x, tid = threadIdx.x;
    float t = temperature[row];
    unsigned long long key = splitmix(seeds[row] ^ splitmix((unsigned long long)steps[row]));
    float bv = NEG_INF;
    int bi = 0x7FFFFFFF;
    for (int v = tid; v < vocab; v += blockDim.x) {
        float x = logits[(long long)row * vocab + v];
        if (x == NEG_INF) continue;
        float s = x;
        if (t > 0.0f) {
            unsigned long long h = splitmix(key + (unsigned long long)v);
            double u = ((double)(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
            s = x / t - (float)log(-log(u));
        }
        if (s > bv || (s == bv && v < bi)) { bv = s; bi = v; }
    }
    best_v[tid] = bv;
    best_i[tid] = bi;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            float ov = best_v[tid + stride];
            int oi = best_i[tid + stride];
            if (ov > best_v[tid] || (ov == best_v[tid] && oi < best_i[tid])) { best_v[tid] = ov; best_i[tid] = oi; }
        }
        __syncthreads();
    }
    if (tid == 0) out[row] = best_i[0] == 0x7FFFFFFF ? 0 : best_i[0];
}
"""

_KIND_CODE = {QuantKind.Q4_0: 0, QuantKind.Q4_1: 1, QuantKind.Q8_0: 2}
_THREADS = 256


def available() -> bool:
    """True when cupy imports and sees a CUDA device."""
    try:
        import cupy
    except Exception:
        return False
    try:
        return bool(cupy.cuda.is_available())
    except Exception:
        return False


@functools.cache
def _module() -> Any:
    import cupy

    return cupy.RawModule(code=_SOURCE)


def _cupy(t: torch.Tensor) -> Any:
    import cupy

    return cupy.from_dlpack(t)


@contextlib.contextmanager
def _on(t: torch.Tensor) -> Iterator[None]:
    """Launch on ``t``'s device and on torch's current stream, so the kernel is ordered with torch's work."""
    import cupy

    with (
        cupy.cuda.Device(t.device.index),
        cupy.cuda.ExternalStream(torch.cuda.current_stream(t.device).cuda_stream),
    ):
        yield


def dequantize(raw: torch.Tensor, kind: QuantKind) -> torch.Tensor:
    """Raw blocks [rows, row_bytes] (uint8, CUDA) -> float32 [rows, cols], same numbers as ggml."""
    if raw.device.type != "cuda" or raw.dtype != torch.uint8 or raw.dim() != 2:
        raise ValueError("expected a uint8 [rows, row_bytes] CUDA tensor")
    raw = raw.contiguous()
    rows, cols = raw.shape[0], raw.shape[1] // kind.block_bytes * 32
    out = torch.empty(rows, cols, dtype=torch.float32, device=raw.device)
    n = rows * cols
    grid = ((n + _THREADS - 1) // _THREADS,)
    with _on(raw):
        _module().get_function("dequant")(
            grid, (_THREADS,), (_cupy(raw), _cupy(out), np.int64(n), np.int32(_KIND_CODE[kind]))
        )
    return out


def gumbel_argmax(
    logits: torch.Tensor, temperature: torch.Tensor, seeds: torch.Tensor, steps: torch.Tensor
) -> torch.Tensor:
    """Per row of ``logits`` [B, V] (float32, CUDA, -inf where filtered out): the chosen token id.

    ``temperature`` [B] float32, ``seeds`` [B] int64 (read as unsigned bits), ``steps`` [B] int64, all
    on the same device.
    """
    if logits.device.type != "cuda":
        raise ValueError("expected CUDA tensors")
    logits = logits.contiguous().float()
    batch, vocab = logits.shape
    out = torch.empty(batch, dtype=torch.int64, device=logits.device)
    args = (_cupy(logits), _cupy(temperature.contiguous()), _cupy(seeds.contiguous()))
    with _on(logits):
        _module().get_function("gumbel_argmax")(
            (batch,), (_THREADS,), (*args, _cupy(steps.contiguous()), _cupy(out), np.int32(vocab))
        )
    return out
