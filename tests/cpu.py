"""Test helper: this CPU's instruction sets, and the environment that limits a process to a lower one.

torch picks its CPU kernels by ``ATEN_CPU_CAPABILITY`` and oneDNN (torch's dense GEMMs) by
``ONEDNN_MAX_CPU_ISA``; accord's kernels follow ``ATEN_CPU_CAPABILITY`` too. Setting both reproduces on
one machine what an AVX2-only or a baseline x86-64 machine computes.
"""

from __future__ import annotations

from pathlib import Path

#: capability -> (the CPU flags it needs, oneDNN's matching ISA limit).
CAPABILITIES: dict[str, tuple[tuple[str, ...], str]] = {
    "default": ((), "SSE41"),
    "avx2": (("avx2", "fma"), "AVX2"),
    "avx512": (("avx512f", "avx512bw", "avx512vl", "avx512dq"), "AVX512_CORE"),
}


def cpu_flags() -> set[str]:
    """The flags /proc/cpuinfo lists for the first CPU (empty where it cannot be read)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def has_capability(capability: str) -> bool:
    return set(CAPABILITIES[capability][0]) <= cpu_flags()


def capability_env(capability: str) -> dict[str, str]:
    """The variables that limit a process (torch, oneDNN and accord's kernels) to ``capability``."""
    return {"ATEN_CPU_CAPABILITY": capability, "ONEDNN_MAX_CPU_ISA": CAPABILITIES[capability][1]}


#: The instruction sets accord's kernels run on this CPU, lowest first, and the CPU flags each needs. No
#: ATEN_CPU_CAPABILITY value selects AMX: it is what an unlimited process runs where the CPU has it (and
#: Linux grants the tiles).
KERNEL_SETS: dict[str, tuple[str, ...]] = {
    "avx2": CAPABILITIES["avx2"][0],
    "avx512": CAPABILITIES["avx512"][0],
    "amx": (*CAPABILITIES["avx512"][0], "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16"),
}


def kernel_sets() -> list[str]:
    """The sets of ``KERNEL_SETS`` this CPU has, lowest first."""
    flags = cpu_flags()
    return [name for name, need in KERNEL_SETS.items() if set(need) <= flags]


def below_best() -> list[str]:
    """The kernel sets below this CPU's best. The benchmarks set each beside llama.cpp built for that
    set alone (``LLAMA_TARGET`` of ``.ci/llama.sh``: what a machine whose best it is runs), and the best
    beside llama.cpp built for this CPU. Every CPU with AMX has the VNNI and VBMI that llama.cpp's
    ``avx512`` build needs."""
    return kernel_sets()[:-1]


if __name__ == "__main__":
    # For .ci/run: the llama.cpp builds the benchmarks want beside the native one.
    print(" ".join(below_best()))
