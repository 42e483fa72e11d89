"""Each (state, event) pair of the fold and of the terminal guard transitions or raises (STYLE 3, 11)."""

from __future__ import annotations

import pytest

from accord.errors import ProtocolViolation
from accord.events.items import FunctionCallItem, MessageItem, ReasoningItem, Usage
from accord.events.response import (
    ArgumentsAppended,
    Cancelled,
    Completed,
    Failed,
    FoldError,
    Incomplete,
    ItemAdded,
    ItemClosed,
    Opened,
    PartAdded,
    ResponseEvent,
    Snapshot,
    TextAppended,
)
from accord.events.wire import (
    Error,
    OutputTextDelta,
    ResponseCompleted,
    ResponseFailed,
    ResponseIncomplete,
    ResponseInProgress,
    WireEvent,
)
from accord.pipeline.guard import StreamState, TerminalGuard

USAGE = Usage.of(input_tokens=1, cached_tokens=0, output_tokens=1, reasoning_tokens=0)
OPENED = Opened(response_id="r", created_at=1, model="m")
MSG = MessageItem(id="msg_1", role="assistant", status="in_progress", content=[])
RS = ReasoningItem(id="rs_1", summary=[], content=[], status="in_progress")
FC = FunctionCallItem(id="fc_1", call_id="call_1", name="f", arguments="", status="in_progress")
TERMINALS: list[ResponseEvent] = [
    Completed(usage=USAGE, completed_at=2),
    Incomplete(reason="max_output_tokens", usage=USAGE),
    Failed(code="engine_error", message="x"),
    Cancelled(),
]


def snapshot(*events: ResponseEvent) -> Snapshot:
    snap = Snapshot()
    for event in events:
        snap.apply(event)
    return snap


@pytest.mark.parametrize("event", [ItemAdded(output_index=0, item=MSG), *TERMINALS])
def test_nothing_before_opened(event: ResponseEvent) -> None:
    with pytest.raises(FoldError):
        snapshot(event)


@pytest.mark.parametrize("terminal", TERMINALS)
@pytest.mark.parametrize("after", [ItemAdded(output_index=0, item=MSG), OPENED, *TERMINALS])
def test_nothing_after_a_terminal_event(terminal: ResponseEvent, after: ResponseEvent) -> None:
    with pytest.raises(FoldError):
        snapshot(OPENED, terminal, after)


@pytest.mark.parametrize(
    "bad",
    [
        ItemAdded(output_index=1, item=MSG),  # index must be the next one
        PartAdded(output_index=0, content_index=0, part="output_text"),  # no item yet
        TextAppended(output_index=0, content_index=0, delta="x"),
        ArgumentsAppended(output_index=0, delta="{}"),
        ItemClosed(output_index=0, status="completed"),
    ],
)
def test_events_need_their_item(bad: ResponseEvent) -> None:
    with pytest.raises(FoldError):
        snapshot(OPENED, bad)


def test_parts_must_fit_the_item() -> None:
    with pytest.raises(FoldError):
        snapshot(
            OPENED,
            ItemAdded(output_index=0, item=MSG),
            PartAdded(output_index=0, content_index=0, part="reasoning_text"),
        )
    with pytest.raises(FoldError):
        snapshot(
            OPENED,
            ItemAdded(output_index=0, item=RS),
            PartAdded(output_index=0, content_index=0, part="output_text"),
        )
    with pytest.raises(FoldError):
        snapshot(
            OPENED,
            ItemAdded(output_index=0, item=FC),
            PartAdded(output_index=0, content_index=0, part="output_text"),
        )
    with pytest.raises(FoldError):
        snapshot(OPENED, ItemAdded(output_index=0, item=MSG), ArgumentsAppended(output_index=0, delta="{}"))


def test_closed_items_take_no_more_text() -> None:
    with pytest.raises(FoldError):
        snapshot(
            OPENED,
            ItemAdded(output_index=0, item=MSG),
            PartAdded(output_index=0, content_index=0, part="output_text"),
            ItemClosed(output_index=0, status="completed"),
            TextAppended(output_index=0, content_index=0, delta="late"),
        )


@pytest.mark.parametrize(
    ("terminal", "status", "item_status"),
    [
        (TERMINALS[0], "completed", "completed"),
        (TERMINALS[1], "incomplete", "incomplete"),
        (TERMINALS[2], "failed", "incomplete"),
        (TERMINALS[3], "cancelled", "incomplete"),
    ],
)
def test_terminal_events_close_open_items(terminal: ResponseEvent, status: str, item_status: str) -> None:
    snap = snapshot(
        OPENED,
        ItemAdded(output_index=0, item=MSG),
        PartAdded(output_index=0, content_index=0, part="output_text"),
        TextAppended(output_index=0, content_index=0, delta="Hel"),
        TextAppended(output_index=0, content_index=0, delta="lo"),
        terminal,
    )
    assert snap.status == status
    out = snap.output()
    assert out[0].status == item_status
    assert out[0].content[0].text == "Hello"  # type: ignore[union-attr]


WIRE_TERMINALS: list[WireEvent] = [
    ResponseCompleted(response={}),
    ResponseIncomplete(response={}),
    ResponseFailed(response={}),
]


@pytest.mark.parametrize("terminal", WIRE_TERMINALS)
@pytest.mark.parametrize(
    "after",
    [
        ResponseInProgress(response={}),
        Error(code="x", message="y"),
        *WIRE_TERMINALS,
        OutputTextDelta(item_id="m", output_index=0, content_index=0, delta="x", logprobs=[]),
    ],
)
def test_guard_rejects_anything_after_terminal(terminal: WireEvent, after: WireEvent) -> None:
    guard = TerminalGuard()
    guard.check(terminal)
    assert guard.terminated
    with pytest.raises(ProtocolViolation):
        guard.check(after)


def test_guard_stays_open_for_non_terminal_events() -> None:
    guard = TerminalGuard()
    for event in [ResponseInProgress(response={}), Error(code="x", message="y")]:
        guard.check(event)
    assert guard.state is StreamState.OPEN
