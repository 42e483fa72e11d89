"""The bytes of a Chat Completions or Messages stream, from the batches a Responses run emits.

A run (``pipeline/run.py``) folds every response event into its EventLog and hands its
egress batches of Responses wire events. :class:`Reframer` turns each batch into the other
protocol's frames: it projects the response events the log has gained since the last batch
(the projections read only what each event made final, so the log's current Snapshot serves
for all of them) and turns each keepalive of the batch into that protocol's keepalive. A
keepalive is a ``response.in_progress`` that does not follow ``response.created``: the run
sends the opening pair together and every later ``in_progress`` is a keepalive.

After the terminal event, Chat Completions ends with ``data: [DONE]``; a Messages stream ends
after ``message_stop`` or its ``error`` event.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from accord.events.chat_wire import DONE_FRAME, KEEPALIVE_FRAME, ChatOut, ChatProjection, chat_frame
from accord.events.messages_wire import PING_FRAME, MessagesEvent, MessagesProjection, messages_frame
from accord.events.response import ResponseEvent, Snapshot
from accord.events.wire import ResponseCreated, ResponseInProgress, WireEvent

Out = TypeVar("Out")
OutCo = TypeVar("OutCo", covariant=True)


class Projection(Protocol[OutCo]):
    def feed(self, event: ResponseEvent, snapshot: Snapshot) -> Sequence[OutCo]: ...


class Log(Protocol):
    """What the reframer reads of an EventLog."""

    @property
    def events(self) -> list[ResponseEvent]: ...

    @property
    def snapshot(self) -> Snapshot: ...


class Reframer(Generic[Out]):
    """Sans-IO: ``feed(batch, log) -> bytes`` for one response, batch after batch."""

    def __init__(
        self,
        projection: Projection[Out],
        frame: Callable[[Out], bytes],
        *,
        keepalive: bytes,
        done: bytes = b"",
    ) -> None:
        self._projection = projection
        self._frame = frame
        self._keepalive = keepalive
        self._done = done
        self._cursor = 0
        self.ended = False

    def feed(self, batch: Sequence[WireEvent], log: Log) -> bytes:
        frames: list[bytes] = []
        events = log.events
        for event in events[self._cursor :]:
            frames.extend(self._frame(out) for out in self._projection.feed(event, log.snapshot))
        self._cursor = len(events)
        previous: WireEvent | None = None
        for wire in batch:
            if isinstance(wire, ResponseInProgress) and not isinstance(previous, ResponseCreated):
                frames.append(self._keepalive)
            previous = wire
        if log.snapshot.terminal is not None and not self.ended:
            self.ended = True
            frames.append(self._done)
        return b"".join(frames)


def chat_reframer(*, include_usage: bool) -> Reframer[ChatOut]:
    """Chat Completions: ``data:`` frames, an SSE comment as keepalive, ``[DONE]`` last."""
    return Reframer(
        ChatProjection(include_usage=include_usage),
        chat_frame,
        keepalive=KEEPALIVE_FRAME,
        done=DONE_FRAME,
    )


def messages_reframer(stops: tuple[str, ...] = ()) -> Reframer[MessagesEvent]:
    """Messages: ``event:``/``data:`` frames, ``ping`` as keepalive; ``stops``: the request's
    ``stop_sequences``."""
    return Reframer(MessagesProjection(stops), messages_frame, keepalive=PING_FRAME)
