"""The model's numeric tests under every instruction set this CPU has (issue: right on every CPU).

torch picks its CPU kernels by the CPU's capability, and ``ATEN_CPU_CAPABILITY`` forces a lower one;
oneDNN (which runs torch's dense GEMMs) is limited the same way by ``ONEDNN_MAX_CPU_ISA``. Together they
reproduce what an AVX2-only or a baseline machine computes, so each path is tested here in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cpu import CAPABILITIES, capability_env, has_capability

pytestmark = [pytest.mark.model, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
MODULES = ["tests/engine/test_precision.py", "tests/engine/test_gguf_variants.py"]


@pytest.mark.parametrize("capability", list(CAPABILITIES))
def test_model_numerics_under_each_capability(capability: str) -> None:
    if not has_capability(capability):
        pytest.skip(f"this CPU lacks {capability}")
    env = {**os.environ, **capability_env(capability)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    check = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert check.stdout.strip().lower() == capability
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *MODULES],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
