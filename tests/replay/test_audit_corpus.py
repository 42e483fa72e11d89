"""The audit flags each hand-built defective stream exactly, passes the clean ones, and agrees with the SDK.

The corpus (``streams/``, written by ``make_corpus.py``) holds one stream per defect class, modelled on the
defects the seed changes measured in production and on the SDK probes of docs/spec.md A6, plus clean streams in
OpenAI's documented order. ``streams_expected.json`` lists the codes each one must raise.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from accord.replay.audit import audit_file, audit_path
from accord.replay.census import take_census
from accord.replay.defects import DEFECT_CLASSES, RESPONSES_CLASSES
from tests.replay.sdk_oracle import sdk_outcome

HERE = Path(__file__).parent
STREAMS = HERE / "streams"
EXPECTED: dict[str, dict[str, object]] = json.loads((HERE / "streams_expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_corpus_stream_is_flagged_exactly(name: str) -> None:
    verdict = audit_file(STREAMS / name)
    assert sorted(verdict.codes()) == EXPECTED[name]["codes"], [d.detail for d in verdict.defects]
    assert verdict.status == ("defective" if EXPECTED[name]["codes"] else "sound")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_breaks_sdk_claims_match_the_real_sdk_helper(name: str) -> None:
    """The audit says which defects make the openai SDK raise; the SDK itself is the judge of that."""
    verdict = audit_file(STREAMS / name)
    raised = sdk_outcome((STREAMS / name).read_bytes())
    assert verdict.breaks_sdk == (raised is not None), raised


def test_the_corpus_covers_every_defect_class_and_nothing_else() -> None:
    planted = {code for entry in EXPECTED.values() for code in entry["codes"]}  # type: ignore[attr-defined]
    # The Chat Completions and Messages classes are planted in tests/replay/test_protocol_audit.py.
    assert planted == set(RESPONSES_CLASSES) and set(DEFECT_CLASSES) >= RESPONSES_CLASSES
    assert sorted(p.name for p in STREAMS.iterdir()) == sorted(EXPECTED)


def test_census_over_the_corpus_counts_units_exactly() -> None:
    out = io.StringIO()
    assert audit_path(STREAMS, out) == 1
    text = out.getvalue()
    clean = sum(1 for e in EXPECTED.values() if not e["codes"])
    assert (
        f"census: {len(EXPECTED)} inputs: {len(EXPECTED)} read ({clean} sound, {len(EXPECTED) - clean} defective)"
        in text
    )
    assert "reasoning tail lost in 2 of 38 reasoning items (5.3%)" in text
    assert "stream/final item id mismatch in 2 of 51 responses (3.9%)" in text
    assert "stream/final call_id mismatch in 2 of 13 tool calls (15.4%)" in text
    assert "no terminal event in 2 of 53 streams (3.8%)" in text
    assert "sequence_number restart in 1 of 53 streams (1.9%)" in text
    assert "the openai SDK streaming helper raises on 13 of 53" in text
    assert "reasoning text lost: 34 of 935 chars (3.64%)" in text


def test_census_numbers_follow_from_the_verdicts() -> None:
    verdicts = [audit_file(STREAMS / name) for name in sorted(EXPECTED)]
    census = take_census(verdicts)
    by_code = {c.code: c for c in census.classes}
    for code in DEFECT_CLASSES:
        streams_with = sum(code in v.codes() for v in verdicts)
        assert (by_code[code].affected > 0) == (streams_with > 0)
        assert by_code[code].affected >= streams_with
