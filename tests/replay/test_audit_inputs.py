"""audit_path over files and directories: formats it reads, exit statuses, census arithmetic, JSON."""

from __future__ import annotations

import io
import json
from pathlib import Path

import msgspec

from accord.replay.audit import audit_path, audit_text
from tests.replay.builders import StreamBuilder, to_sse


def _clean() -> str:
    return to_sse(StreamBuilder().reasoning(["Think", "ing."]).message(["Hi", "!"]).finish())


def _tail_lost(rid: str) -> str:
    """Two reasoning items: the second lost its tail in the stream, the final kept the whole text."""
    events = StreamBuilder(rid).reasoning(["a", "b"]).reasoning(["c", "d", "e"], item_id="rs_2").finish()
    for ev in events:
        if (
            ev.get("item_id") == "rs_2"
            and ev["type"] == "response.reasoning_text.delta"
            and ev["delta"] == "e"
        ):
            ev["delta"] = ""
    return to_sse(events)


def _reminted(rid: str) -> str:
    events = StreamBuilder(rid).message(["x"]).finish()
    events[-1]["response"]["output"][0]["id"] = "msg_new"
    return to_sse(events)


def run(path: Path, *, as_json: bool = False) -> tuple[int, str]:
    out = io.StringIO()
    return audit_path(path, out, as_json=as_json), out.getvalue()


def test_a_sound_file_exits_zero(tmp_path: Path) -> None:
    (tmp_path / "a.sse").write_text(_clean())
    status, text = run(tmp_path / "a.sse")
    assert status == 0
    assert text.startswith(f"{tmp_path / 'a.sse'}: sound (response.completed, resp_1,")
    assert "census" not in text


def test_a_defect_exits_one_and_is_described(tmp_path: Path) -> None:
    (tmp_path / "b.sse").write_text(_reminted("resp_b"))
    status, text = run(tmp_path / "b.sse")
    assert status == 1
    assert (
        "item_id_mismatch [output_index 0]: message at output_index 0: streamed as 'msg_1', final 'msg_new'"
        in text
    )


def test_unreadable_inputs_exit_two(tmp_path: Path) -> None:
    """Missing files, empty files and text without any event are failures to read, not clean audits."""
    assert run(tmp_path / "nope.sse")[0] == 2
    (tmp_path / "empty.sse").write_text("")
    assert run(tmp_path / "empty.sse")[0] == 2
    (tmp_path / "prose.txt").write_text("hello\nworld\n")
    status, text = run(tmp_path / "prose.txt")
    assert status == 2
    assert "unreadable -- no server-sent events found" in text


def test_a_directory_skips_non_streams_and_sidecars_but_needs_one_stream(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("captures from the staging fleet\n")
    (tmp_path / "000001.meta.json").write_text('{"status": 200}')
    assert run(tmp_path)[0] == 2
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "s.sse").write_text(_clean())
    status, text = run(tmp_path)
    assert status == 0
    assert "README: skipped" in text
    assert "meta.json" not in text
    assert "census: 2 inputs: 1 read (1 sound, 0 defective), 0 unreadable, 1 skipped" in text


def test_unreadable_outranks_defects_in_a_directory(tmp_path: Path) -> None:
    (tmp_path / "b.sse").write_text(_reminted("resp_b"))
    (tmp_path / "c.sse").write_bytes(b"\n\n")
    assert run(tmp_path)[0] == 2


def test_census_counts_items_and_responses_as_documented(tmp_path: Path) -> None:
    (tmp_path / "1.sse").write_text(_tail_lost("resp_1"))
    (tmp_path / "2.sse").write_text(_tail_lost("resp_2"))
    (tmp_path / "3.sse").write_text(_reminted("resp_3"))
    (tmp_path / "4.sse").write_text(_clean())
    status, text = run(tmp_path)
    assert status == 1
    assert "census: 4 inputs: 4 read (1 sound, 3 defective), 0 unreadable, 0 skipped" in text
    # 2 + 2 + 0 + 1 reasoning items; rs_2 of streams 1 and 2 lost one char each ("e" of "cde").
    assert "reasoning tail lost in 2 of 5 reasoning items (40.0%)" in text
    assert "reasoning text lost: 2 of 19 chars (10.53%)" in text  # 5 + 5 + len("Thinking.")
    assert "stream/final item id mismatch in 1 of 4 responses (25.0%)" in text


def test_json_output_carries_verdicts_and_census(tmp_path: Path) -> None:
    (tmp_path / "1.sse").write_text(_tail_lost("resp_1"))
    status, text = run(tmp_path, as_json=True)
    doc = json.loads(text)
    assert status == doc["exit_status"] == 1
    [verdict] = doc["verdicts"]
    assert verdict["status"] == "defective"
    [defect] = verdict["defects"]
    assert (
        defect["code"] == "reasoning_tail_lost" and defect["lost_chars"] == 1 and defect["output_index"] == 1
    )
    tail = next(c for c in doc["census"]["classes"] if c["code"] == "reasoning_tail_lost")
    assert (tail["affected"], tail["of"], tail["unit"]) == (1, 2, "reasoning items")


def test_json_lines_and_json_array_dumps_of_events_are_streams() -> None:
    events = StreamBuilder().message(["a", "b"]).finish()
    lines = "\n".join(json.dumps(e) for e in events) + "\n"
    assert audit_text(lines).status == "sound"
    assert audit_text(lines).format == "jsonl"
    assert audit_text(json.dumps(events)).format == "json-events"


def test_trace_files_are_audited_by_their_wire_events() -> None:
    events = StreamBuilder().message(["a", "b"]).finish()
    events[3]["sequence_number"] = 9
    records = [{"kind": "trace", "version": 1}] + [{"kind": "wire", "t": 0.0, "event": e} for e in events]
    records.insert(2, {"kind": "chunk", "t": 0.0, "text": "a", "token_ids": [1]})
    verdict = audit_text("\n".join(json.dumps(r) for r in records))
    assert verdict.format == "trace"
    assert verdict.codes() == {"sequence_gap", "sequence_restart"}


def test_non_streamed_bodies_are_checked_for_what_they_can_show() -> None:
    events = StreamBuilder().function_call("f", ["{}"]).function_call("g", ["{}"], item_id="fc_2").finish()
    body = events[-1]["response"]
    assert audit_text(json.dumps(body)).codes() == {"conflicting_identities"}
    body["output"][1]["call_id"] = "call_2"
    assert audit_text(json.dumps(body)).status == "sound"
    body["usage"] = None
    assert audit_text(json.dumps(body)).codes() == {"usage_missing"}


def test_http_error_bodies_are_skipped_not_failed() -> None:
    verdict = audit_text('{"error": {"message": "bad", "type": "invalid_request_error"}}')
    assert verdict.status == "skipped"


def test_invalid_utf8_is_read_with_a_note(tmp_path: Path) -> None:
    data = _clean().encode().replace(b'"Hi"', b'"H\xff"', 1)
    (tmp_path / "x.sse").write_bytes(data)
    status, text = run(tmp_path / "x.sse")
    assert "not valid UTF-8" in text
    assert status == 1  # the replaced character no longer matches the done text


def test_verdicts_round_trip_through_msgspec() -> None:
    verdict = audit_text(_tail_lost("r"))
    assert msgspec.json.decode(msgspec.json.encode(verdict))["status"] == "defective"
