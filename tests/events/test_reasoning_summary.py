"""Reasoning summaries: a second view of the reasoning characters (issue 15 item 4).

With ``reasoning.summary`` set, each ``reasoning_text`` part is also a ``summary_text``
part of the same item: ``reasoning_summary_part.added``, ``reasoning_summary_text.delta``
/ ``.done`` and ``reasoning_summary_part.done`` come from the same response events as
the ``reasoning_text`` ones, and the Snapshot folds both. Without it nothing changes.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import ResponseReasoningItem

from accord.events.response import fold
from tests.events.streams import OPENED, TEXT, assert_clients_survive, chunked, keepalive_after_every_event
from tests.store.records import run_record, service

SUMMARISED = msgspec.structs.replace(OPENED, reasoning_summary=True)
SUMMARY_EVENTS = (
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
)


def _reasoning(body: dict[str, Any]) -> dict[str, Any]:
    item: dict[str, Any] = next(i for i in body["output"] if i["type"] == "reasoning")
    return item


def test_the_summary_repeats_the_reasoning_text_in_the_stream_and_the_body() -> None:
    events, log = keepalive_after_every_event(chunked(TEXT, 3), opened=SUMMARISED)
    assert_clients_survive(events)  # both accumulators, keepalives after every event included
    final = events[-1]["response"]
    item = _reasoning(final)
    assert item["content"] == [{"type": "reasoning_text", "text": "Plan the answer."}]
    assert item["summary"] == [{"type": "summary_text", "text": "Plan the answer."}]
    ResponseReasoningItem.model_validate(item)
    kinds = [e["type"] for e in events]
    for kind in SUMMARY_EVENTS:
        assert kind in kinds
    # Same characters, same pieces: every reasoning delta is followed by its summary delta.
    for i, e in enumerate(events):
        if e["type"] == "response.reasoning_text.delta":
            twin = events[i + 1]
            assert twin["type"] == "response.reasoning_summary_text.delta"
            assert (twin["delta"], twin["summary_index"], twin["item_id"]) == (
                e["delta"],
                e["content_index"],
                e["item_id"],
            )
    # Order: the summary part opens after the content part, closes after it, before the item.
    visible = [k for k in kinds if k != "response.in_progress"]
    closed = visible.index("response.output_item.done")  # the reasoning item is the first
    assert visible[closed - 4 : closed] == [
        "response.reasoning_text.done",
        "response.content_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
    ]
    opened = visible.index("response.content_part.added")
    assert visible[opened + 1] == "response.reasoning_summary_part.added"
    done = next(e for e in events if e["type"] == "response.reasoning_summary_part.done")
    assert "status" not in done
    assert msgspec.to_builtins(fold(log.events).body()) == final


@settings(max_examples=30, deadline=None)
@given(cuts=st.sets(st.integers(1, len(TEXT) - 1), max_size=16))
def test_summary_and_content_agree_for_any_chunking(cuts: set[int]) -> None:
    bounds = [0, *sorted(cuts), len(TEXT)]
    events, _ = keepalive_after_every_event(
        [TEXT[a:b] for a, b in itertools.pairwise(bounds)], opened=SUMMARISED
    )
    assert_clients_survive(events)
    item = _reasoning(events[-1]["response"])
    assert [p["text"] for p in item["summary"]] == [p["text"] for p in item["content"]]
    summary = "".join(e["delta"] for e in events if e["type"] == "response.reasoning_summary_text.delta")
    assert summary == "Plan the answer."


def test_without_summary_nothing_changes() -> None:
    plain, _ = keepalive_after_every_event(chunked(TEXT, 3))
    summarised, _ = keepalive_after_every_event(chunked(TEXT, 3), opened=SUMMARISED)
    assert not [e for e in plain if e["type"] in SUMMARY_EVENTS]
    assert _reasoning(plain[-1]["response"])["summary"] == []
    # Take the summary view away and the summarised stream is the plain one, event for event.
    assert [_unsummarised(e) for e in summarised if e["type"] not in SUMMARY_EVENTS] == [
        _unsummarised(e) for e in plain
    ]


def _unsummarised(event: dict[str, Any]) -> dict[str, Any]:
    def item(i: dict[str, Any]) -> dict[str, Any]:
        return {**i, "summary": []} if i["type"] == "reasoning" else i

    out = {k: v for k, v in event.items() if k != "sequence_number"}
    if "response" in out:
        out["response"] = {**out["response"], "output": [item(i) for i in out["response"]["output"]]}
    if "item" in out:
        out["item"] = item(out["item"])
    return out


def test_a_cut_off_summary_part_is_marked_incomplete() -> None:
    events, _ = keepalive_after_every_event(["<think>Plan the ans"], opened=SUMMARISED, finish="length")
    assert_clients_survive(events)
    done = next(e for e in events if e["type"] == "response.reasoning_summary_part.done")
    assert done["status"] == "incomplete"
    assert done["part"] == {"type": "summary_text", "text": "Plan the ans"}
    assert events[-1]["type"] == "response.incomplete"


@pytest.mark.anyio
@pytest.mark.parametrize("summary", ["auto", "concise", "detailed"])
async def test_the_request_setting_reaches_the_log(tmp_path: Path, summary: str) -> None:
    svc = service(tmp_path)
    record, _, sent = await run_record(svc, {"input": "hi", "reasoning": {"summary": summary}})
    body = msgspec.to_builtins(fold(record.decoded_events()).body())
    assert body["reasoning"]["summary"] == summary
    assert _reasoning(body)["summary"] == [{"type": "summary_text", "text": "Hmm."}]
    assert _reasoning(body)["content"] == [{"type": "reasoning_text", "text": "Hmm."}]
    assert {msgspec.to_builtins(e)["type"] for e in sent} >= set(SUMMARY_EVENTS)


@pytest.mark.anyio
async def test_no_setting_no_summary_through_the_service(tmp_path: Path) -> None:
    svc = service(tmp_path)
    _, _, sent = await run_record(svc, {"input": "hi", "reasoning": {"effort": "low"}})
    assert not {msgspec.to_builtins(e)["type"] for e in sent} & set(SUMMARY_EVENTS)
