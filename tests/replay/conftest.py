from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The suite imports its helpers as ``tests.…`` (as ``python -m pytest`` from the root allows); make the
# bare ``pytest`` entry point see the repository root too.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async replay test runs on both anyio backends (hypercorn serves on both)."""
    return str(request.param)
