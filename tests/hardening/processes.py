"""``accord serve`` as a real subprocess (scripted engine), for tests that need signals or RSS."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.serving import free_port


class Served:
    """One ``accord serve`` process playing ``rules``; extra flags as given."""

    def __init__(
        self, tmp: Path, rules: list[dict[str, Any]], *flags: str, worker_class: str = "asyncio"
    ) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.v1 = self.base_url + "/v1"
        self.data_dir = tmp / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        script = tmp / "rules.json"
        script.write_text(json.dumps({"rules": rules}))
        self.log_path = tmp / f"accord-{self.port}.log"
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
            "--data-dir",
            str(self.data_dir),
            "--worker-class",
            worker_class,
            "--reasoning-parser",
            "none",
            "--tool-parser",
            "none",
            "--log-format",
            "json",
            *flags,
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACCORD_")}
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60.0) -> None:
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

    def status_kib(self, field: str) -> int:
        """A ``/proc/PID/status`` figure in KiB (``VmRSS``, ``VmHWM``)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise KeyError(field)

    def reset_peak(self) -> None:
        """Start ``VmHWM`` again from the current RSS (Linux ``clear_refs`` 5)."""
        Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")

    def log_lines(self) -> list[dict[str, Any]]:
        lines = []
        for line in self.log_path.read_text().splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
        return lines

    def terminate(self) -> None:
        self.process.send_signal(signal.SIGTERM)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
