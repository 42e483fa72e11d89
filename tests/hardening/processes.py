"""``accord serve`` as a real subprocess (scripted engine), for tests that need signals or RSS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.accord_process import AccordProcess


class Served(AccordProcess):
    """One ``accord serve`` process playing ``rules``, its data and log under ``tmp``; extra flags as given."""

    def __init__(
        self, tmp: Path, rules: list[dict[str, Any]], *flags: str, worker_class: str = "asyncio"
    ) -> None:
        script = tmp / "rules.json"
        script.write_text(json.dumps({"rules": rules}))
        super().__init__(script, tmp / "data", *flags, log_dir=tmp, worker_class=worker_class)
