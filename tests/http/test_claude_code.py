"""The Claude Code CLI (npm ``@anthropic-ai/claude-code``) against /v1/messages, non-interactive.

``claude -p`` with ``ANTHROPIC_BASE_URL`` pointed at accord on the scripted engine, whose
rules play Claude-Code-shaped model output: hermes ``<tool_call>`` markup, which the tool
parser turns into ``tool_use`` blocks for Claude Code's own Bash and Write tools. Claude Code
runs the tool and sends its ``tool_result`` back; the rule for a turn that ends in a tool
result answers it. An over-long prompt must reach the CLI as a full context window: it reads
Anthropic's 400 ``prompt is too long: N tokens > M maximum`` and ends with
``terminal_reason: prompt_too_long``.

The CLI comes from ``.ci/claude-code.sh`` (its path in ``ACCORD_CLAUDE_CODE``) or the same
cache the script fills; without node or the package the tests skip, saying so. The CLI's
traffic other than the API calls is switched off (telemetry, error reports, update checks),
since nothing outside the machine can be reached. It refuses
``--dangerously-skip-permissions`` as root, so the tools are allowed by name instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.serving import running, scripted_settings, write_script

pytestmark = pytest.mark.slow

VERSION = os.environ.get("ACCORD_CLAUDE_CODE_VERSION", "2.1.332")
_CACHE = Path(
    os.environ.get("ACCORD_CLAUDE_CODE_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "accord" / "claude-code"
)


def _cli() -> str:
    named = os.environ.get("ACCORD_CLAUDE_CODE")
    candidate = Path(named) if named else _CACHE / VERSION / "node_modules" / ".bin" / "claude"
    if shutil.which("node") is None:
        pytest.skip("node is not installed; the Claude Code CLI needs it")
    if not candidate.exists():
        pytest.skip(f"Claude Code CLI not found at {candidate}; run .ci/claude-code.sh to install it")
    return str(candidate)


def _rules(work: Path) -> list[dict[str, Any]]:
    def call(name: str, arguments: dict[str, Any]) -> str:
        return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"

    return [
        {"when": {"last_item_type": "function_call_output"}, "output": "All done.", "chunk_chars": 3},
        {
            "when": {"last_input": "RUN-BASH"},
            "output": call("Bash", {"command": "echo from-bash > bash.txt", "description": "write bash.txt"}),
            "chunk_chars": 8,
        },
        {
            "when": {"last_input": "WRITE-FILE"},
            "output": call(
                "Write", {"file_path": str(work / "notes.md"), "content": "written through Write\n"}
            ),
            "chunk_chars": 8,
        },
        {"output": "Hello from accord.", "chunk_chars": 4},
    ]


def _claude(cli: str, base_url: str, work: Path, prompt: str) -> dict[str, Any]:
    home = work.parent / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "any-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    done = subprocess.run(
        [cli, "-p", prompt, "--output-format", "json", "--allowedTools", "Bash,Write,Edit,Read"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout.strip(), done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def _server(tmp: Path, work: Path, worker_class: str, max_context: int) -> Any:
    script = write_script(tmp, _rules(work))
    settings = scripted_settings(
        script, worker_class=worker_class, tool_parser="hermes", store="none", max_context=max_context
    )
    return running(settings)


def test_plain_turn_bash_round_trip_and_write(tmp_path: Path, work: Path, worker_class: str) -> None:
    cli = _cli()
    with _server(tmp_path, work, worker_class, max_context=1_000_000) as srv:
        plain = _claude(cli, srv.base_url, work, "say hello")
        assert plain["is_error"] is False and plain["result"] == "Hello from accord."
        assert plain["usage"]["input_tokens"] > 0

        bash = _claude(cli, srv.base_url, work, "RUN-BASH please")
        assert bash["is_error"] is False and bash["result"] == "All done.", bash
        assert (work / "bash.txt").read_text() == "from-bash\n"

        wrote = _claude(cli, srv.base_url, work, "WRITE-FILE please")
        assert wrote["is_error"] is False and wrote["result"] == "All done.", wrote
        assert (work / "notes.md").read_text() == "written through Write\n"


def test_over_long_prompt_reaches_it_as_a_full_context_window(
    tmp_path: Path, work: Path, worker_class: str
) -> None:
    cli = _cli()
    # Claude Code's own system prompt and tools are far over this.
    with _server(tmp_path, work, worker_class, max_context=3000) as srv:
        result = _claude(cli, srv.base_url, work, "say hello")
    assert result["is_error"] is True
    assert (result["api_error_status"], result["terminal_reason"]) == (400, "prompt_too_long"), result
    assert "limit 3000" in result["result"]
