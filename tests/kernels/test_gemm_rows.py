"""Prompt rows go through one float32 GEMM per layer; a row's result must not depend on the rows beside it."""

from __future__ import annotations

import os

import torch

from accord.kernels.linear import gemm_rows_vary


def test_the_strict_blas_mode_is_set_for_the_process() -> None:
    assert os.environ.get("MKL_CBWR", "").endswith("STRICT")


def test_gemm_rows_do_not_depend_on_the_rows_beside_them() -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(max(2, threads))
    try:
        assert not gemm_rows_vary()
    finally:
        torch.set_num_threads(threads)
