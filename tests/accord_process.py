"""``accord serve`` as a real subprocess (scripted engine) on loopback, for tests that need one.

A subprocess is what signals, RSS figures, kill -9 and several processes sharing one store
need; everything else uses :mod:`tests.serving` (hypercorn in a thread). The server logs
JSON lines to a file beside its data, read back by :meth:`AccordProcess.log_lines`.
"""

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


class AccordProcess:
    """One ``accord serve`` process playing ``script``, its data in ``data_dir``; extra flags as given."""

    def __init__(
        self,
        script: Path,
        data_dir: Path,
        *flags: str,
        log_dir: Path | None = None,
        worker_class: str = "asyncio",
        ready_timeout: float = 60.0,
    ) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.v1 = self.base_url + "/v1"
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = (log_dir or data_dir) / f"accord-{self.port}.log"
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
            str(data_dir),
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
        # The test's own settings only: ACCORD_* variables of the environment would change them.
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACCORD_")}
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        self._wait_ready(ready_timeout)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"accord exited early:\n{self.log_path.read_text()}")
            try:
                if httpx.get(self.base_url + "/health", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)  # polling another process's port: there is no event to wait on
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
        """SIGTERM: the graceful shutdown; the caller waits for it."""
        self.process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """kill -9: no shutdown, no finish hooks, nothing flushed."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        """SIGTERM and wait for the exit; kill -9 if it does not come."""
        if self.process.poll() is None:
            self.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def close(self) -> None:
        """Gone at once, whatever state it is in (a test's cleanup)."""
        if self.process.poll() is None:
            self.kill()
