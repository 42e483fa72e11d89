"""``accord serve`` as real subprocesses sharing one store, for the multi-process acceptance tests."""

from __future__ import annotations

from pathlib import Path

from tests.accord_process import AccordProcess


class Accord(AccordProcess):
    """One ``accord serve`` process (scripted engine) on a store URL."""

    def __init__(self, script: Path, store: str, data_dir: Path, *, worker_class: str = "asyncio") -> None:
        super().__init__(
            script,
            data_dir,
            "--store",
            store,
            "--shutdown-grace",
            "1",
            worker_class=worker_class,
            ready_timeout=30.0,
        )
