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
