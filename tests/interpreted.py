"""Test helper: run a module with the compiled parse stage hidden, so its Python source runs instead.

setup.py compiles the parse stage (``accord.pipeline.parse``, ``holdback``, ``reasoning``, ``tools``)
with mypyc where a C compiler is present, and a compiled module is imported in place of its ``.py``.
An install without a compiler runs the same files interpreted; this is how the tests and the parse
stage benchmark run that path on a machine that has the compiled one::

    python -m tests.interpreted pytest -q tests/parsers
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import accord.pipeline

#: The package whose compiled modules are hidden.
PACKAGE = "accord.pipeline."


def is_compiled(module: ModuleType) -> bool:
    """Whether ``module`` was loaded from an extension (compiled) rather than its source."""
    return str(module.__file__).endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def compiled_modules() -> list[tuple[Path, Path]]:
    """(source, extension) of every parse-stage module that has a compiled build beside it."""
    root = Path(accord.pipeline.__file__).parent
    pairs = []
    for source in sorted(root.rglob("*.py")):
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            built = source.with_name(source.stem + suffix)
            if built.exists():
                pairs.append((source, built))
                break
    return pairs


class _SourceOnly(importlib.abc.MetaPathFinder):
    """Finds ``accord.pipeline.*`` modules by their ``.py`` files alone."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        del target
        if path is None or not fullname.startswith(PACKAGE):
            return None
        loaders = (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES)
        for entry in path:
            spec = importlib.machinery.FileFinder(entry, loaders).find_spec(fullname)
            if spec is not None:
                return spec
        return None


def hide_compiled() -> None:
    """From now on, parse-stage modules not yet imported load from their source."""
    sys.meta_path.insert(0, _SourceOnly())


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -m tests.interpreted MODULE [ARGS...]")
    hide_compiled()
    sys.argv = sys.argv[1:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
