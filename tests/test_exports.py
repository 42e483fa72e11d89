"""Each package's public names exist and are what ``__all__`` says (STYLE 9)."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "accord.events",
    "accord.engine",
    "accord.pipeline.reasoning",
    "accord.pipeline.tools",
    "accord.adapters.requests",
    "accord.adapters.templates",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_names_resolve(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported, f"{name} has no __all__"
    assert len(set(exported)) == len(exported)
    for attr in exported:
        assert hasattr(module, attr), f"{name}.{attr} is in __all__ but missing"
