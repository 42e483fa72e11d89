"""Help from one source (Settings): every setting is a flag with help and default, the README's
table is generated from the same source, and ``--help`` of every command matches its snapshot.

After a deliberate change, rewrite the snapshots with ``ACCORD_UPDATE_SNAPSHOTS=1``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import accord
from accord.cli import _parser, settings_from_args
from accord.config import Settings
from accord.flags import REGISTRIES, markdown_table, serve_flags, undocumented

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).parent / "snapshots"
COMMANDS = [
    ["--help"],
    ["serve", "--help"],
    ["audit", "--help"],
    ["replay", "--help"],
    ["record", "--help"],
    ["fuzz", "--help"],
    ["fuzz", "parsers", "--help"],
    ["fuzz", "pipeline", "--help"],
]
BEGIN, END = "<!-- serve flags: begin -->\n", "<!-- serve flags: end -->\n"


def _help(args: list[str]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCORD_")}
    env.update(PYTHONPATH=str(ROOT), COLUMNS="100", HOME="/home/user")
    result = subprocess.run(
        [sys.executable, "-m", "accord", *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: "-".join(x.strip("-") for x in a))
def test_help_snapshot(args: list[str]) -> None:
    text = _help(args)
    snapshot = SNAPSHOTS / ("_".join(a.strip("-") for a in args) + ".txt")
    if os.environ.get("ACCORD_UPDATE_SNAPSHOTS"):
        snapshot.write_text(text)
    assert text == snapshot.read_text()


def test_every_setting_is_a_flag_with_help() -> None:
    assert undocumented() == []
    flags = {f.name for f in serve_flags()}
    assert flags == set(Settings.model_fields)
    serve = _help(["serve", "--help"])
    for f in serve_flags():
        assert f.flag in serve and f.env in serve


def _value(kwargs: dict[str, Any], name: str) -> list[str]:
    if "choices" in kwargs:
        return [str(kwargs["choices"][-1])]
    kind = kwargs.get("type")
    if kind is int:
        return ["700"]  # valid for every int setting (the KV cache holds at least 64 positions)
    if kind is float:
        return ["2.5"]
    return [f"some/{name}" if kind is Path else f"v-{name}"]


def test_every_flag_reaches_its_setting() -> None:
    argv = ["serve"]
    expected: dict[str, Any] = {}
    for f in serve_flags():
        if f.kwargs.get("action") is not None and f.kwargs["action"] != "append":
            argv.append(f.flag)
            expected[f.name] = True
            continue
        (value,) = _value(f.kwargs, f.name)
        argv += [f.flag, value]
        expected[f.name] = value
    settings = settings_from_args(_parser().parse_args(argv))
    for name, value in expected.items():
        got = getattr(settings, name)
        if isinstance(got, list):
            got = got[0]
        assert str(got) == str(value), name


def test_registry_choices_are_offered() -> None:
    serve = _help(["serve", "--help"])
    for name, names in REGISTRIES.items():
        assert all(n in serve for n in names()), name
    with pytest.raises(SystemExit):
        _parser().parse_args(["serve", "--tool-parser", "no_such_parser"])


def test_readme_lists_the_flags_from_the_same_source() -> None:
    readme = (ROOT / "README.md").read_text()
    assert BEGIN in readme and END in readme
    listed = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    assert listed == markdown_table(), "README flag table is stale: paste accord.flags.markdown_table()"


def test_version() -> None:
    assert _help(["--version"]).strip() == f"accord {accord.__version__}"


def test_every_flag_of_every_command_has_help() -> None:
    import argparse

    def walk(parser: argparse.ArgumentParser, path: str) -> list[str]:
        missing = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    missing += walk(sub, f"{path} {name}")
            elif not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
        return missing

    assert walk(_parser(), "accord") == []
