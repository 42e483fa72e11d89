"""Sealed reasoning (SPEC I4): our own values read back exactly; anything else is ignored with a warning."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from structlog.testing import capture_logs

from accord.adapters.requests import NormalizeOptions, RequestLimits, Sealer, decode_request, normalize
from accord.adapters.requests.sealing import KEY_FILE


def test_seal_round_trips_unicode_text() -> None:
    sealer = Sealer.from_secret("s3cret")
    text = "Let me think… 北京 → ok\n" * 10
    sealed = sealer.seal(text)
    assert text not in sealed and sealer.unseal(sealed) == text


def test_the_same_secret_gives_the_same_key_across_processes() -> None:
    assert Sealer.from_secret("k").unseal(Sealer.from_secret("k").seal("x")) == "x"


def test_key_is_generated_once_in_the_data_dir_with_mode_0600(tmp_path: Path) -> None:
    first = Sealer.from_settings(None, tmp_path / "data")
    key_file = tmp_path / "data" / KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    second = Sealer.from_settings(None, tmp_path / "data")
    assert second.unseal(first.seal("kept")) == "kept"


def test_tampered_foreign_and_garbage_values_are_rejected_with_one_warning_each() -> None:
    sealer = Sealer.from_secret("mine")
    sealed = sealer.seal("reasoning")
    flipped = sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1]
    for value in (
        flipped,
        Sealer.from_secret("theirs").seal("reasoning"),
        "gAAAA_capture_encrypted_blob",
        "",
        "%%%",
    ):
        with capture_logs() as logs:
            assert sealer.unseal(value) is None
        assert [entry["log_level"] for entry in logs] == ["warning"]


def _reasoning_body(encrypted: str, summary: list[dict[str, str]]) -> bytes:
    return json.dumps(
        {
            "input": [
                {"role": "user", "content": "q"},
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": summary,
                    "content": None,
                    "encrypted_content": encrypted,
                },
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A"}]},
                {"role": "user", "content": "next"},
            ]
        }
    ).encode()


def test_replayed_sealed_reasoning_restores_the_original_text() -> None:
    """The acceptance round trip: content null, encrypted_content ours -> the next prompt has the reasoning."""
    sealer = Sealer.from_secret("k")
    original = "The user asks q. I should answer A.\n\nDone."
    body = _reasoning_body(sealer.seal(original), [{"type": "summary_text", "text": "digest"}])
    conv = normalize(decode_request(body, RequestLimits()), options=NormalizeOptions(sealer=sealer))
    assert conv.messages[1].reasoning == original


def test_foreign_sealed_reasoning_falls_back_to_the_summary_or_is_skipped() -> None:
    sealer = Sealer.from_secret("k")
    with_summary = _reasoning_body("gAAAA_foreign", [{"type": "summary_text", "text": "digest"}])
    conv = normalize(decode_request(with_summary, RequestLimits()), options=NormalizeOptions(sealer=sealer))
    assert conv.messages[1].reasoning == "digest"
    bare = _reasoning_body("gAAAA_foreign", [])
    with capture_logs() as logs:
        conv = normalize(decode_request(bare, RequestLimits()), options=NormalizeOptions(sealer=sealer))
    assert conv.messages[1].reasoning is None and len(logs) == 1


def test_compaction_sealed_by_us_becomes_the_summary_and_foreign_ones_are_skipped() -> None:
    sealer = Sealer.from_secret("k")

    def body(value: str) -> bytes:
        return json.dumps(
            {
                "input": [
                    {"type": "compaction", "encrypted_content": value},
                    {"role": "user", "content": "go on"},
                ]
            }
        ).encode()

    conv = normalize(
        decode_request(body(sealer.seal("summary so far")), RequestLimits()),
        options=NormalizeOptions(sealer=sealer),
    )
    assert [(m.role, m.text) for m in conv.messages] == [("user", "summary so far"), ("user", "go on")]
    conv = normalize(
        decode_request(body("gAAAA_x"), RequestLimits()), options=NormalizeOptions(sealer=sealer)
    )
    assert [m.text for m in conv.messages] == ["go on"]
