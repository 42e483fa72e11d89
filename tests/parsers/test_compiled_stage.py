"""The parse stage compiled (mypyc, setup.py) and interpreted: one source, both paths tested.

An install with a C compiler imports the compiled modules; one without runs the ``.py`` files. The
suite runs on whichever this install has; here the parser and pipeline tests run again with the
compiled modules hidden, so the other path is known to pass too, and a compiled module older than
its source (an edit not yet rebuilt, which would test stale code) fails at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import accord.pipeline.parse
from accord.kernels import decode
from tests.interpreted import compiled_modules, is_compiled

ROOT = Path(__file__).resolve().parents[2]


def test_every_compiled_module_is_built_from_its_current_source() -> None:
    if not Path(accord.pipeline.parse.__file__).is_relative_to(ROOT):
        pytest.skip("accord is installed from a wheel here: its sources and builds came together")
    stale = [
        str(source.relative_to(ROOT))
        for source, built in compiled_modules()
        if built.stat().st_mtime < source.stat().st_mtime
    ]
    assert not stale, f"compiled before their last edit (rebuild with `make install`): {stale}"


#: Set for the run below: the compiled modules are hidden in it.
EXPECT_INTERPRETED = "ACCORD_TEST_EXPECT_INTERPRETED"


def test_the_stage_runs_as_built() -> None:
    if os.environ.get(EXPECT_INTERPRETED):
        assert not is_compiled(accord.pipeline.parse)
    elif compiled_modules():
        # A partial build (one module compiled, the rest interpreted) is not what setup.py makes.
        assert is_compiled(accord.pipeline.parse)
    elif decode.built() and not os.environ.get("ACCORD_PURE_PYTHON"):
        # The build that compiled the C kernels had a compiler, and mypy is a build requirement: the
        # stage left interpreted there means setup.py dropped it without a word.
        pytest.fail("the decode kernels are compiled and the parse stage is not (see setup.py)")


@pytest.mark.slow
def test_the_parser_and_pipeline_tests_pass_interpreted() -> None:
    if not is_compiled(accord.pipeline.parse):
        pytest.skip("this install runs the parse stage interpreted already: the suite itself tests it")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.interpreted",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not slow and not benchmark",
            "tests/parsers",
            "tests/pipeline",
        ],
        cwd=ROOT,
        env={**os.environ, EXPECT_INTERPRETED: "1"},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout.splitlines()[-1]
