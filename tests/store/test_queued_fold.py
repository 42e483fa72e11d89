"""A background response accepted but not started is ``queued`` by its fold, not by patching a body."""

from __future__ import annotations

import pytest

from accord.events.items import MessageItem
from accord.events.response import Cancelled, FoldError, ItemAdded, Opened, fold

QUEUED = Opened(response_id="resp_1", created_at=1, model="m", queued=True)


def test_a_queued_opening_folds_to_a_queued_response() -> None:
    """The stored row of a background response reads as queued from its log alone (SPEC S4)."""
    body = fold([QUEUED]).body()
    assert body["status"] == "queued"
    assert body["output"] == [] and body["id"] == "resp_1"


def test_a_plain_opening_is_in_progress() -> None:
    """A run opens in progress: the queued state belongs to the stored opening only."""
    assert fold([Opened(response_id="resp_1", created_at=1, model="m")]).status == "in_progress"


@pytest.mark.parametrize(
    "event",
    [
        ItemAdded(
            output_index=0, item=MessageItem(id="msg_1", role="assistant", status="in_progress", content=[])
        ),
        Cancelled(),
    ],
)
def test_nothing_follows_a_queued_opening(event: object) -> None:
    """A queued log is a placeholder: the run's own log replaces it, so anything appended to it is a bug."""
    with pytest.raises(FoldError):
        fold([QUEUED, event])  # type: ignore[list-item]
