from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def worker_class(request: pytest.FixtureRequest) -> str:
    """Every HTTP test runs against hypercorn on both anyio backends."""
    return str(request.param)
