"""Traces round-trip: a varied session recorded by accord replays with no change and no violation.

Also: rechunked replays keep the snapshot, tampered traces are reported, redaction keeps prompt text out
of the files, and a recorder that cannot keep up drops traces (counted) instead of waiting.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from accord.replay._tracefile import load_trace
from accord.replay.audit import audit_path
from accord.replay.replay import replay_dir, replay_paths, trace_files
from tests.replay.session import SECRET, run_session


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def traces(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One recorded session per worker class, shared by the tests below (they only read it)."""
    directory, recorder = run_session(tmp_path_factory.mktemp(f"session-{request.param}"), str(request.param))
    assert recorder.statistics().written == 10
    assert recorder.statistics().dropped == 0
    return directory


def causes(directory: Path) -> Counter[str]:
    return Counter(str(load_trace(p).cause) for p in trace_files(directory))


def test_the_session_covers_every_ending(traces: Path) -> None:
    assert causes(traces) == Counter(
        {
            "completed": 6,
            "incomplete": 1,
            "failed:engine_error": 1,
            "failed:context_length_exceeded": 1,
            "client_disconnected": 1,
        }
    )
    kinds = {json.loads(line)["kind"] for p in trace_files(traces) for line in p.read_text().splitlines()}
    assert kinds == {"trace", "engine", "wire", "final", "end"}


def test_replay_reports_no_change_and_no_violation(traces: Path) -> None:
    out = io.StringIO()
    assert replay_dir(traces, out) == 0, out.getvalue()
    assert (
        "replay: 10 traces: 10 unchanged, 0 changed, 0 with invariant violations, 0 unreadable"
        in out.getvalue()
    )


def test_rechunked_replay_keeps_every_snapshot(traces: Path) -> None:
    """SPEC invariant 2 on recorded traffic: any chunking of the same output folds to the same response."""
    for seed in (1, 2, 3):
        out = io.StringIO()
        assert replay_dir(traces, out, rechunk_seed=seed) == 0, out.getvalue()


async def test_replay_runs_on_both_backends(traces: Path, anyio_backend: str) -> None:
    results = await replay_paths(trace_files(traces), None)
    assert [r.error for r in results] == [None] * 10
    assert not any(r.changed or r.violated for r in results)


def test_traces_audit_as_streams(traces: Path) -> None:
    """The audit reads traces; only the hang-up lacks its terminal event (nobody was left to send it to)."""
    out = io.StringIO()
    assert audit_path(traces, out, as_json=True) == 1
    verdicts = json.loads(out.getvalue())["verdicts"]
    assert {v["format"] for v in verdicts} == {"trace"}
    defective = [v for v in verdicts if v["status"] == "defective"]
    assert [[d["code"] for d in v["defects"]] for v in defective] == [["missing_terminal"]]


def test_continuations_record_what_they_were_built_from(traces: Path) -> None:
    headers = [load_trace(p).header for p in trace_files(traces)]
    [continued] = [h for h in headers if h["request"].get("previous_response_id")]
    assert [i.get("type", "message") for i in continued["history"]][:1] == ["message"]
    [referencing] = [h for h in headers if isinstance(h["request"].get("input"), list)]
    assert next(iter(referencing["references"].values()))["type"] == "message"


def test_keepalives_were_recorded_and_do_not_count_as_changes(traces: Path) -> None:
    slow = next(
        load_trace(p) for p in trace_files(traces) if "slow" in json.dumps(load_trace(p).header["request"])
    )
    types = [e["type"] for e in slow.wire]
    assert types.count("response.in_progress") > 1


def _copy_with(traces: Path, tmp_path: Path, edit: Any) -> Path:
    """A copy of the completed tool-call trace, changed by ``edit(records)``."""
    source = next(p for p in trace_files(traces) if "call the tool" in p.read_text())
    records = [json.loads(line) for line in source.read_text().splitlines()]
    edit(records)
    target = tmp_path / source.name
    target.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return target


def test_a_changed_recording_is_reported(traces: Path, tmp_path: Path) -> None:
    def edit(records: list[dict[str, Any]]) -> None:
        delta = next(
            r for r in records if r["kind"] == "wire" and r["event"]["type"] == "response.output_text.delta"
        )
        delta["event"]["delta"] = "Chucking"

    path = _copy_with(traces, tmp_path, edit)
    out = io.StringIO()
    assert replay_dir(path, out) == 1
    assert "CHANGED, VIOLATION" in out.getvalue()
    assert "stream: event" in out.getvalue() and "delta: recorded 'Chucking'" in out.getvalue()
    assert "recorded stream violates text_mismatch" in out.getvalue()


def test_a_recording_with_restarted_numbers_is_a_violation(traces: Path, tmp_path: Path) -> None:
    def edit(records: list[dict[str, Any]]) -> None:
        wire = [r for r in records if r["kind"] == "wire"]
        for n, r in enumerate(wire[2:]):
            r["event"]["sequence_number"] = n

    out = io.StringIO()
    assert replay_dir(_copy_with(traces, tmp_path, edit), out) == 1
    assert "recorded stream violates sequence_restart" in out.getvalue()
    assert "unchanged, VIOLATION" in out.getvalue()  # sequence numbers are recounted, so no change


def test_unreadable_traces_exit_two(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"kind": "wire"}\n')
    out = io.StringIO()
    assert replay_dir(tmp_path, out) == 2
    assert "unreadable -- not an accord trace" in out.getvalue()
    assert replay_dir(tmp_path / "missing", io.StringIO()) == 2
    assert replay_dir(tmp_path / "empty-dir-is-made-below", io.StringIO()) == 2


def test_redacted_traces_hold_no_prompt_text_and_still_replay(tmp_path: Path) -> None:
    directory, _ = run_session(tmp_path, redact=True)
    files = trace_files(directory)
    assert files and not any(SECRET in p.read_text() for p in files)
    assert all(load_trace(p).header["redacted"] for p in files)
    out = io.StringIO()
    assert replay_dir(directory, out) == 0, out.getvalue()
