"""The core install (``pip install .``, no extras) fronts a remote engine without torch, numpy,
gguf, psycopg or hypothesis, and names the extra a missing feature needs."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import venv
from pathlib import Path

import httpx
import pytest

from tests.remote.fake_vllm import FakeVLLM
from tests.remote.harness import Served

ROOT = Path(__file__).resolve().parents[2]
#: The fake upstream names no model whose files could be found, so the template is given, as a user would.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("core")
    # A copy of the source, so that the build leaves nothing in the checkout.
    src = tmp / "src"
    shutil.copytree(ROOT / "accord", src / "accord", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    subprocess.run([str(env_dir / "bin" / "pip"), "install", "--quiet", str(src)], check=True, timeout=900)
    return env_dir


def _python(env_dir: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(env_dir / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=120, cwd="/"
    )


def test_core_install_has_no_heavy_dependencies(core_venv: Path) -> None:
    for module in ("torch", "numpy", "gguf", "psycopg", "hypothesis", "trio"):
        assert _python(core_venv, f"import {module}").returncode != 0, module


def test_core_install_serves_a_remote_upstream(core_venv: Path, tmp_path: Path) -> None:
    upstream = Served(FakeVLLM("up", model="fake-model")).start()
    try:
        command = [str(core_venv / "bin" / "accord"), "serve", "--engine", "remote"]
        command += ["--upstream", upstream.url, "--model-name", "fake-model", "--port", "0"]
        command += ["--log-format", "json", "--data-dir", str(tmp_path / "data")]
        template = tmp_path / "chatml.jinja"
        template.write_text(CHATML)
        command += ["--chat-template", str(template)]
        proc = subprocess.Popen(
            command,
            stderr=subprocess.PIPE,
            text=True,
            cwd="/",
        )
        assert proc.stderr is not None
        url = None
        for raw in proc.stderr:
            line = json.loads(raw)
            if line["event"] == "ready":
                url = line["url"]
                break
        assert url is not None
        try:
            resp = httpx.post(
                url + "/v1/responses", json={"model": "fake-model", "input": "Say hello."}, timeout=60
            )
            assert resp.status_code == 200, resp.text
            body = resp.json()
            assert body["status"] == "completed"
            assert any(item["type"] == "message" for item in body["output"])
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
        assert proc.returncode == 0
    finally:
        upstream.stop()


def test_missing_extras_are_named(core_venv: Path, tmp_path: Path) -> None:
    accord = str(core_venv / "bin" / "accord")
    cases = [
        (["serve", "--data-dir", str(tmp_path)], "accord[local]"),
        (
            ["serve", "--engine", "scripted", "--store", "postgresql://x/y", "--data-dir", str(tmp_path)],
            "accord[postgres]",
        ),
        (["fuzz", "pipeline"], "accord[fuzz]"),
    ]
    for args, extra in cases:
        result = subprocess.run([accord, *args], capture_output=True, text=True, timeout=120, cwd="/")
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.strip().splitlines()[-1].startswith("accord: "), result.stderr
        assert extra in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_python_dash_m(core_venv: Path) -> None:
    result = subprocess.run(
        [str(core_venv / "bin" / "python"), "-m", "accord", "--version"],
        capture_output=True,
        text=True,
        cwd="/",
    )
    assert result.returncode == 0 and result.stdout.startswith("accord ")
    assert sys.version_info >= (3, 11)
