"""The import layering of ARCHITECTURE.md, checked on the real import graph.

`events/` and the parsers stay free of anyio, hypercorn and torch; nothing below
`adapters/` imports `adapters`; `engine` and `kernels` know nothing of HTTP or the wire.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "accord"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        (
            "events",
            ("anyio", "hypercorn", "torch", "trio", "accord.pipeline", "accord.engine", "accord.adapters"),
        ),
        ("pipeline/reasoning", ("anyio", "hypercorn", "torch", "trio", "accord.adapters", "accord.engine")),
        ("pipeline/tools", ("anyio", "hypercorn", "torch", "trio", "accord.adapters", "accord.engine")),
        ("pipeline", ("hypercorn", "torch", "accord.adapters")),
        ("engine", ("hypercorn", "accord.adapters", "accord.events.wire", "accord.pipeline")),
        ("kernels", ("hypercorn", "accord.adapters", "accord.events", "accord.pipeline")),
    ],
)
def test_package_imports_stay_below_its_layer(package: str, forbidden: tuple[str, ...]) -> None:
    """Each layer imports only what sits below it (ARCHITECTURE "Imports point down")."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules(package)
        for name in _imports(path)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]
    assert offenders == []


def test_events_load_without_io_libraries() -> None:
    """Importing the whole events package and every parser pulls in no event loop, server or torch."""
    code = (
        "import sys, accord.events.wire, accord.events.response, accord.events.generation, "
        "accord.pipeline.reasoning, accord.pipeline.tools, accord.pipeline.parse, accord.pipeline.items;"
        "bad = [m for m in ('anyio', 'hypercorn', 'torch', 'trio') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""
