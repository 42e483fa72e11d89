from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["asyncio", "trio"])
def worker_class(request: pytest.FixtureRequest) -> str:
    """Every served test runs against hypercorn on both anyio backends."""
    return str(request.param)
