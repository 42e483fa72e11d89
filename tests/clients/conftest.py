from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.matrix import KEEPALIVE_INTERVAL, RULES
from tests.serving import Server, running, scripted_settings, write_script

HERE = Path(__file__).parent


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One accord per module and worker class: scripted engine, glm45 reasoning (a leading <think> the model writes), Hermes tool calls."""
    script = write_script(tmp_path_factory.mktemp("clients"), RULES)
    settings = scripted_settings(
        script,
        worker_class=request.param,
        keepalive_interval=KEEPALIVE_INTERVAL,
        reasoning_parser="glm45",
        tool_parser="hermes",
        model_name="scripted",
    )
    with running(settings) as srv:
        yield srv


def node_modules() -> Path | None:
    """Where .ci/node-clients.sh installed the Node clients (same key: the lockfile's hash)."""
    explicit = os.environ.get("ACCORD_NODE_MODULES")
    if explicit:
        return Path(explicit)
    lock = HERE / "node" / "package-lock.json"
    sha = hashlib.sha256(lock.read_bytes()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "accord" / f"npm-{sha}" / "node_modules"


@pytest.fixture(scope="session")
def node() -> tuple[str, Path]:
    """The node binary and the installed clients, or a skip saying which is missing."""
    binary = shutil.which("node")
    if binary is None:
        pytest.skip("node is not installed")
    modules = node_modules()
    if modules is None or not modules.is_dir():
        pytest.skip(f"Node clients not installed at {modules}: run .ci/node-clients.sh")
    return binary, modules
