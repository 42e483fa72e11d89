"""Properties of the audit over generated streams, beyond the hand-built corpus.

Any stream in OpenAI's documented order, whatever its items and however its text is split, is sound and
the SDK reads it; dropping any one event from it (other than the optional ``error`` before
``response.failed``, an empty delta, a part's only delta, or the closing of an item in a failed
response) is always flagged; and no input, however broken, makes the audit raise.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.replay.audit import audit_events, audit_text
from tests.replay.builders import Event, StreamBuilder, number, to_sse
from tests.replay.sdk_oracle import sdk_outcome

pieces = st.lists(
    st.sampled_from(["a", " ", "é", "\n", '"', "\\", "\u2028", "😀", "{}", "data: x"]), max_size=6
)
texts = pieces.map(lambda p: p or [""])


@st.composite
def streams(draw: st.DrawFn) -> list[Event]:
    builder = StreamBuilder(f"resp_{draw(st.integers(0, 9))}")
    kinds = draw(st.lists(st.sampled_from(["reasoning", "message", "refusal", "call", "custom"]), max_size=4))
    for n, kind in enumerate(kinds):
        chunks = draw(texts)
        if kind == "reasoning":
            builder.reasoning(chunks, item_id=f"rs_{n}")
        elif kind == "message":
            builder.message(chunks, item_id=f"msg_{n}")
        elif kind == "refusal":
            builder.refusal(chunks, item_id=f"msg_{n}")
        elif kind == "call":
            builder.function_call("f", chunks, item_id=f"fc_{n}", call_id=f"call_{n}")
        else:
            builder.custom_call("apply_patch", chunks, item_id=f"ctc_{n}", call_id=f"call_{n}")
    return builder.finish(draw(st.sampled_from(["completed", "incomplete", "failed"])))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=streams())
def test_documented_order_streams_are_sound_and_read_by_the_sdk(events: list[Event]) -> None:
    verdict = audit_text(to_sse(events))
    assert verdict.status == "sound", [d.detail for d in verdict.defects]
    assert sdk_outcome(to_sse(events).encode()) is None


@settings(max_examples=150, deadline=None)
@given(events=streams(), data=st.data())
def test_dropping_any_required_event_is_flagged(events: list[Event], data: st.DataObject) -> None:
    # An empty delta carries nothing; without its only delta a part is sent whole by its done event,
    # which is legal (some servers never stream deltas); a failed response may leave its last item
    # open (it failed inside it). Every other event is required.
    per_part = Counter((e.get("item_id"), e.get("content_index")) for e in events if "delta" in e)
    failed = events[-1]["type"] == "response.failed"

    def required(e: Event) -> bool:
        if e["type"] == "error" or (failed and e["type"] == "response.output_item.done"):
            return False
        return not (
            "delta" in e and (e["delta"] == "" or per_part[e.get("item_id"), e.get("content_index")] == 1)
        )

    droppable = [i for i, e in enumerate(events) if required(e)]
    index = data.draw(st.sampled_from(droppable))
    broken = number(events[:index] + events[index + 1 :])
    verdict = audit_events(broken)
    assert verdict.status == "defective", events[index]["type"]


@settings(max_examples=200, deadline=None)
@given(raw=st.text(max_size=400) | st.binary(max_size=400).map(lambda b: b.decode("latin-1")))
def test_no_input_makes_the_audit_raise(raw: str) -> None:
    verdict = audit_text(raw)
    assert verdict.status in ("sound", "defective", "unreadable", "skipped")


@settings(max_examples=100, deadline=None)
@given(events=streams(), data=st.data())
def test_garbled_events_are_reported_not_raised(events: list[Event], data: st.DataObject) -> None:
    """Any event replaced by arbitrary JSON still gives a verdict (and the stream is never called sound)."""
    index = data.draw(st.integers(0, len(events) - 1))
    junk: Any = data.draw(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(
                    st.sampled_from(
                        [
                            "type",
                            "output_index",
                            "item",
                            "item_id",
                            "delta",
                            "response",
                            "part",
                            "sequence_number",
                        ]
                    ),
                    inner,
                    max_size=4,
                )
            ),
            max_leaves=8,
        )
    )
    garbled = [*events[:index], junk, *events[index + 1 :]]
    verdict = audit_events(garbled)
    assert verdict.status in ("sound", "defective")
