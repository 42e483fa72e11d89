"""The cupy kernels' CUDA source, compiled for the host with a stand-in for the CUDA built-ins.

No GPU is needed: each launch is emulated (a "block" of threads is a set of std::threads meeting at a
barrier where the kernel calls __syncthreads). This checks the kernels' logic -- block layouts, fp16
decoding, the reduction, the noise -- against the same references as the GPU tests; the GPU tests in
test_cuda_kernels.py check the real launch where a device exists.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import gguf
import numpy as np
import pytest

from accord.kernels.cuda import _SOURCE

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")

STANDIN = r"""
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#define __global__
#define __device__
#define __shared__ static
struct dim { unsigned x; };
static dim blockIdx, blockDim;
static thread_local dim threadIdx;
static std::barrier<>* sync_point;
static void __syncthreads() { sync_point->arrive_and_wait(); }
static float __int_as_float(unsigned int v) { float f; std::memcpy(&f, &v, 4); return f; }
static float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
static float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
"""

DRIVER = r"""
template <class F> static void launch(unsigned grid, unsigned block, F body) {
    blockDim.x = block;
    for (unsigned b = 0; b < grid; b++) {
        blockIdx.x = b;
        std::barrier<> bar(block);
        sync_point = &bar;
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block; t++) threads.emplace_back([&, t] { threadIdx.x = t; body(); });
        for (auto& th : threads) th.join();
    }
}

int main(int argc, char** argv) {
    if (argv[1][0] == 'd') {  // dequant KIND N NBYTES < raw > float32
        int kind = atoi(argv[2]); long long n = atoll(argv[3]); long long nbytes = atoll(argv[4]);
        std::vector<unsigned char> raw(nbytes);
        if (fread(raw.data(), 1, nbytes, stdin) != (size_t)nbytes) return 2;
        std::vector<float> out(n);
        launch((n + 255) / 256, 256, [&] { dequant(raw.data(), out.data(), n, kind); });
        fwrite(out.data(), 4, n, stdout);
    } else {  // sample ROWS VOCAB THREADS < logits, temperature, seeds, steps > int64
        int rows = atoi(argv[2]), vocab = atoi(argv[3]), block = atoi(argv[4]);
        std::vector<float> logits((size_t)rows * vocab), temp(rows);
        std::vector<unsigned long long> seeds(rows);
        std::vector<long long> steps(rows), out(rows);
        if (fread(logits.data(), 4, logits.size(), stdin) != logits.size()) return 2;
        if (fread(temp.data(), 4, rows, stdin) != (size_t)rows) return 2;
        if (fread(seeds.data(), 8, rows, stdin) != (size_t)rows) return 2;
        if (fread(steps.data(), 8, rows, stdin) != (size_t)rows) return 2;
        launch(rows, block, [&] { gumbel_argmax(logits.data(), temp.data(), seeds.data(), steps.data(), out.data(), vocab); });
        fwrite(out.data(), 8, rows, stdout);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cuda_on_host")
    source, binary = folder / "kernels.cpp", folder / "kernels"
    source.write_text(STANDIN + _SOURCE + DRIVER)
    built = subprocess.run(
        ["g++", "-std=c++20", "-O1", "-ffp-contract=off", "-pthread", "-o", str(binary), str(source)],
        capture_output=True,
        text=True,
    )
    if built.returncode != 0:
        pytest.skip(f"the host compiler cannot build the stand-in: {built.stderr[:300]}")
    return binary


TYPES = {
    0: gguf.GGMLQuantizationType.Q4_0,
    1: gguf.GGMLQuantizationType.Q4_1,
    2: gguf.GGMLQuantizationType.Q8_0,
}


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_dequant_kernel_matches_gguf(kernels: Path, kind: int) -> None:
    rng = np.random.default_rng(kind)
    weights = (rng.standard_normal((8, 128)) * rng.uniform(1e-5, 3.0, (8, 1))).astype(np.float32)
    raw = gguf.quants.quantize(weights, TYPES[kind])
    run = subprocess.run(
        [str(kernels), "d", str(kind), str(weights.size), str(raw.nbytes)],
        input=raw.tobytes(),
        capture_output=True,
    )
    got = np.frombuffer(run.stdout, dtype=np.float32).reshape(weights.shape)
    np.testing.assert_array_equal(got, gguf.quants.dequantize(raw, TYPES[kind]))


def sample(
    kernels: Path,
    logits: np.ndarray,
    temp: np.ndarray,
    seeds: np.ndarray,
    steps: np.ndarray,
    threads: int = 256,
) -> np.ndarray:
    """Run the kernel; fewer ``threads`` per block than the real 256 only to keep the emulation quick."""
    payload = b"".join(
        [
            logits.astype(np.float32).tobytes(),
            temp.astype(np.float32).tobytes(),
            seeds.astype(np.uint64).tobytes(),
            steps.astype(np.int64).tobytes(),
        ]
    )
    rows, vocab = logits.shape
    command = [str(kernels), "s", str(rows), str(vocab), str(threads)]
    run = subprocess.run(command, input=payload, capture_output=True)
    return np.frombuffer(run.stdout, dtype=np.int64)


def test_sampling_kernel_is_greedy_at_zero_and_fixed_by_seed(kernels: Path) -> None:
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((4, 1000))
    logits[1, 10] = logits[1, 20] = logits[1].max() + 1  # a tie goes to the lower index
    logits[3] = logits[2]
    logits[2, :500] = -np.inf  # filtered out
    temp = np.array([0.0, 0.0, 1.0, 1.0])
    out = sample(kernels, logits, temp, np.array([1, 2, 3, 3]), np.array([0, 0, 5, 5]))
    assert out[0] == logits[0].argmax() and out[1] == 10
    assert out[2] >= 500
    assert np.array_equal(out, sample(kernels, logits, temp, np.array([1, 2, 3, 3]), np.array([0, 0, 5, 5])))


def test_sampling_kernel_frequencies_follow_the_softmax(kernels: Path) -> None:
    rows = 2000
    logits = np.tile(np.array([2.0, 1.0, 0.0, -1.0]), (rows, 1))
    out = sample(kernels, logits, np.full(rows, 0.7), np.full(rows, 9), np.arange(rows), threads=4)
    expected = np.exp(logits[0] / 0.7) / np.exp(logits[0] / 0.7).sum()
    np.testing.assert_allclose(np.bincount(out, minlength=4) / rows, expected, atol=0.04)
