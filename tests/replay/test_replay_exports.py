"""accord.replay's public names resolve, and importing it pulls in no server, store or fuzzer (STYLE 9)."""

from __future__ import annotations

import subprocess
import sys

import accord.replay


def test_all_names_resolve() -> None:
    assert len(set(accord.replay.__all__)) == len(accord.replay.__all__)
    for name in accord.replay.__all__:
        assert hasattr(accord.replay, name), name


def test_the_audit_loads_without_the_server() -> None:
    """``accord audit`` must start fast and run anywhere a capture is: no hypercorn, httpx or Hypothesis."""
    code = (
        "import sys, accord.replay, accord.replay.audit;"
        "print(','.join(m for m in ('hypercorn', 'httpx', 'hypothesis', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
