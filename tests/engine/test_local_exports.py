"""The embedded engine's and the kernels' public names exist and are what ``__all__`` says (STYLE 9)."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("name", ["accord.engine.local", "accord.kernels"])
def test_all_names_resolve(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(set(exported)) == len(exported)
    assert all(hasattr(module, attr) for attr in exported)


def test_importing_the_kernels_does_not_import_cupy() -> None:
    """cupy is optional: it must be imported only when a GPU kernel runs."""
    import sys

    importlib.import_module("accord.kernels")
    assert "cupy" not in sys.modules


def test_local_engine_speaks_the_engine_protocol() -> None:
    """Checked by mypy: the assignment only type-checks if LocalEngine matches ``Engine``."""
    from accord.engine.local import LocalEngine
    from accord.engine.protocol import Engine

    def as_engine(engine: LocalEngine) -> Engine:
        return engine

    assert callable(as_engine)
