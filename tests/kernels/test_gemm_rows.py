"""Prompt rows go through one float32 GEMM per layer; a row's result must not depend on the rows beside it."""

from __future__ import annotations

import os
import subprocess
import sys

import torch

from accord.kernels.linear import gemm_rows_vary


def _mkl_mode_after_import(**env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
    code = "import os, accord; print(os.environ.get('MKL_CBWR', ''))"
    done = subprocess.run(
        [sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_importing_accord_turns_on_strict_mode_and_keeps_a_users_choice() -> None:
    assert _mkl_mode_after_import() == "AUTO,STRICT"
    assert _mkl_mode_after_import(MKL_CBWR="COMPATIBLE") == "COMPATIBLE"


def test_gemm_rows_do_not_depend_on_the_rows_beside_them() -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(max(2, threads))
    try:
        assert not gemm_rows_vary()
    finally:
        torch.set_num_threads(threads)
