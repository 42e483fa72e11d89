"""``accord serve`` as real subprocesses sharing one store, for the multi-process acceptance tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.serving import free_port


class Accord:
    """One ``accord serve`` process (scripted engine) on a store URL."""

    def __init__(self, script: Path, store: str, data_dir: Path, *, worker_class: str = "asyncio") -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.v1 = self.base_url + "/v1"
        self.log_path = data_dir / f"accord-{self.port}.log"
        data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            sys.executable,
            "-m",
            "accord.cli",
            "serve",
            "--engine",
            "scripted",
            "--script",
            str(script),
            "--port",
            str(self.port),
            "--store",
            store,
            "--data-dir",
            str(data_dir),
            "--worker-class",
            worker_class,
            "--reasoning-parser",
            "none",
            "--tool-parser",
            "none",
            "--shutdown-grace",
            "1",
            "--log-format",
            "json",
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACCORD_")}
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"accord exited early:\n{self.log_path.read_text()}")
            try:
                if httpx.get(self.base_url + "/health", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"accord did not start:\n{self.log_path.read_text()}")

    def kill(self) -> None:
        """kill -9: no shutdown, no finish hooks, nothing flushed."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
