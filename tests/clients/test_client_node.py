"""openai-node and the Vercel AI SDK (``ai`` 6 with ``@ai-sdk/openai`` 3) against accord.

The clients are installed by ``.ci/node-clients.sh`` into a cache outside the checkout; each test
runs one scenario of ``node/matrix.mjs`` with ``node`` and checks the JSON line it prints.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients.matrix import CITY, KEEPALIVE_TEXT, PLAIN_TEXT, REASONING, THINK_ANSWER, TOOL_ANSWER
from tests.serving import Server

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "node" / "matrix.mjs"
STREAMED = pytest.mark.parametrize("streamed", [False, True])
CLIENTS = pytest.mark.parametrize("which", ["openai", "vercel"])


def scenario(node: tuple[str, Path], server: Server, which: str, name: str, streamed: bool) -> dict[str, Any]:
    binary, modules = node
    env = {
        **os.environ,
        "ACCORD_BASE": server.v1,
        "CLIENT": which,
        "SCENARIO": name,
        "STREAMED": "1" if streamed else "0",
    }
    # Bare imports resolve from the working directory when the module comes on stdin.
    done = subprocess.run(
        [binary, "--input-type=module"],
        input=SCRIPT.read_text(),
        cwd=modules.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(lines[-1])
    assert result.pop("ok"), result.get("error")
    return result


@CLIENTS
@STREAMED
def test_plain(node: Any, server: Server, which: str, streamed: bool) -> None:
    assert scenario(node, server, which, "plain", streamed)["text"] == PLAIN_TEXT


@CLIENTS
@STREAMED
def test_tool_loop(node: Any, server: Server, which: str, streamed: bool) -> None:
    result = scenario(node, server, which, "tool_loop", streamed)
    assert result["text"] == TOOL_ANSWER
    if which == "openai":
        assert result["call"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    else:
        assert result["calls"] == ["Paris"]


@CLIENTS
@STREAMED
def test_keepalive_mid_stream(node: Any, server: Server, which: str, streamed: bool) -> None:
    """For openai-node streamed, the extra: responses.stream() folds keepalives between deltas."""
    result = scenario(node, server, which, "keepalive", streamed)
    assert result["text"] == KEEPALIVE_TEXT
    if which == "openai" and streamed:
        assert result["keepalive_after_delta"]


@CLIENTS
@STREAMED
def test_structured_output(node: Any, server: Server, which: str, streamed: bool) -> None:
    assert scenario(node, server, which, "structured", streamed)["object"] == CITY


@CLIENTS
@STREAMED
def test_continuation(node: Any, server: Server, which: str, streamed: bool) -> None:
    result = scenario(node, server, which, "continuation", streamed)
    assert result["text"] == PLAIN_TEXT
    assert result["more_input"]
    if which == "openai":
        assert result["previous"]


@CLIENTS
@STREAMED
def test_reasoning(node: Any, server: Server, which: str, streamed: bool) -> None:
    """For the Vercel AI SDK, the extra: reasoningText from the reasoning summary."""
    result = scenario(node, server, which, "reasoning", streamed)
    assert result["text"] == THINK_ANSWER
    assert result["reasoning"] == REASONING
