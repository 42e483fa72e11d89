"""The compiled parts of accord, both optional: an install without a C compiler runs pure Python.

- ``accord.kernels._decode``: the decode kernels (accord/kernels/csrc, C with per-function
  instruction sets, no -march). Without it the engine runs its torch path.
- The parse stage (``accord.pipeline.parse``, ``holdback``, ``reasoning``, ``tools``), compiled
  from its own typed Python by mypyc. The Python files stay the one source: with the compiled
  modules absent (``ACCORD_PURE_PYTHON=1`` at build time, or no compiler) the same code runs
  interpreted. Compiled, the stage costs about half as much per streamed delta
  (docs/architecture.md, "The parse stage, compiled").

Everything else about the package is in pyproject.toml.
"""

from __future__ import annotations

import glob
import os

from setuptools import Extension, setup

CSRC = "accord/kernels/csrc"

KERNELS = Extension(
    "accord.kernels._decode",
    sources=[
        f"{CSRC}/{name}.c"
        for name in (
            "module",
            "pool",
            "pack",
            "sample",
            "isa_generic",
            "isa_avx2",
            "isa_avx512",
            "isa_amx",
        )
    ],
    depends=sorted(glob.glob(f"{CSRC}/*.h")),
    extra_compile_args=["-O3", "-ffp-contract=off", "-Wno-psabi", "-Wno-unknown-pragmas"],
    extra_link_args=["-pthread"],
    optional=True,
)

#: The modules a request's parse stage runs, per engine delta.
PARSE_STAGE = sorted(
    [
        "accord/pipeline/parse.py",
        "accord/pipeline/holdback.py",
        *glob.glob("accord/pipeline/reasoning/*.py"),
        *glob.glob("accord/pipeline/tools/*.py"),
    ]
)


def parse_stage() -> list[Extension]:
    if os.environ.get("ACCORD_PURE_PYTHON"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        return []
    extensions: list[Extension] = mypycify(PARSE_STAGE, group_name="accord.pipeline.compiled", opt_level="3")
    for ext in extensions:
        # A warning that a newer compiler adds must not turn into a failed install.
        ext.extra_compile_args = [arg for arg in ext.extra_compile_args if arg != "-Werror"]
        ext.optional = True
    return extensions


if __name__ == "__main__":  # (setuptools runs this file as __main__; tests import it for KERNELS)
    setup(ext_modules=[KERNELS, *parse_stage()])
