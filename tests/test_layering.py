"""The import layering of docs/architecture.md, checked on the real import graph.

`events/` and the parsers stay free of anyio, hypercorn and torch; nothing below
`adapters/` imports `adapters`; `engine` and `kernels` know nothing of HTTP, the wire or
configuration. The same rules, with the layers and "no cycles anywhere", are import-linter
contracts in pyproject.toml, run here and by `make lint`.
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
        (
            "engine",
            ("hypercorn", "accord.adapters", "accord.config", "accord.events.wire", "accord.pipeline"),
        ),
        ("adapters/store", ("accord.adapters.http", "accord.adapters.build", "accord.config")),
        ("kernels", ("hypercorn", "accord.adapters", "accord.events", "accord.pipeline")),
    ],
)
def test_package_imports_stay_below_its_layer(package: str, forbidden: tuple[str, ...]) -> None:
    """Each layer imports only what sits below it (docs/architecture.md "Imports point down")."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules(package)
        for name in _imports(path)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]
    assert offenders == []


def _loaded_by(modules: list[str], watched: tuple[str, ...]) -> list[str]:
    """Which of ``watched`` a fresh interpreter has loaded after importing ``modules``."""
    code = f"import sys, {', '.join(modules)}; print(' '.join(m for m in {watched!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_events_load_without_io_libraries() -> None:
    """Importing the whole events package and every parser pulls in no event loop, server or torch."""
    events = ["accord.events.wire", "accord.events.response", "accord.events.generation"]
    pipeline = [
        "accord.pipeline.reasoning",
        "accord.pipeline.tools",
        "accord.pipeline.parse",
        "accord.pipeline.items",
    ]
    assert _loaded_by(events + pipeline, ("anyio", "hypercorn", "torch", "trio")) == []


def test_the_server_loads_no_http_client_until_an_upstream_needs_one() -> None:
    """The HTTP app (which names the remote engine's errors) does not import the client the remote
    engine talks through: about 7 MiB a server of the embedded engine never uses."""
    server = ["accord.adapters.build", "accord.adapters.http.app", "accord.adapters.http.completions"]
    assert _loaded_by(server, ("httpx", "httpcore", "accord.engine.upstream")) == []


def test_import_contracts_hold() -> None:
    """The import-linter contracts of pyproject.toml (layers, no cycles, a pure core) hold on today's code."""
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.skip("import-linter is not installed next to this interpreter")
    done = subprocess.run(
        [str(lint), "--no-cache", "--no-logo"],
        cwd=ROOT.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:]


def test_every_exception_class_is_in_the_error_tree() -> None:
    """Every exception class accord defines subclasses AccordError, so whose fault it was is always known."""
    import importlib
    import inspect
    import pkgutil

    import accord
    from accord.errors import AccordError

    outside: list[str] = []
    for info in pkgutil.walk_packages(accord.__path__, "accord."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not issubclass(value, AccordError)
            ):
                outside.append(f"{module.__name__}.{name}")
    assert outside == []


def test_the_error_tree_drawing_names_every_public_class() -> None:
    """The tree in errors.py's docstring lists each class that errors.py defines."""
    import accord.errors as errors

    drawing = errors.__doc__ or ""
    defined = [
        name
        for name, value in vars(errors).items()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    ]
    assert defined and all(name in drawing for name in defined)
