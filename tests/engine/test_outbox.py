"""The outbox: the engine thread hands a request's events to the task streaming them, waking it on its
own event loop without waiting for that loop."""

from __future__ import annotations

import threading
from functools import partial

import anyio
import pytest

from accord.engine.local._outbox import Outbox, Wake, loop_caller
from accord.events.generation import Chunk, Finished, GenerationOutput

pytestmark = pytest.mark.anyio


def _chunk(text: str) -> Chunk:
    return Chunk(text=text, token_ids=(1,))


async def _drain(outbox: Outbox) -> list[GenerationOutput]:
    """What a consumer sees, parking whenever the outbox is empty, up to the terminal event."""
    seen = list[GenerationOutput]()
    while not seen or not isinstance(seen[-1], Finished):
        seen.extend(await outbox.next_items())
    return seen


async def test_a_parked_consumer_is_woken_by_puts_from_another_thread() -> None:
    outbox = Outbox()
    sent = [_chunk(str(i)) for i in range(200)]

    def engine() -> None:
        for item in sent:  # one at a time, so the consumer parks again and again
            outbox.put([item])
        outbox.put([Finished(reason="stop", prompt_tokens=1, cached_tokens=0, output_tokens=200)])
        outbox.release()

    thread = threading.Thread(target=engine)
    with anyio.fail_after(20):
        thread.start()
        seen = await _drain(outbox)
    thread.join()
    assert seen[:-1] == sent
    assert outbox.released


async def test_release_wakes_a_parked_consumer() -> None:
    outbox = Outbox()
    call_soon, arrived = loop_caller(), anyio.Event()
    assert outbox.take(partial(call_soon, arrived.set)) == []
    threading.Thread(target=outbox.release).start()
    with anyio.fail_after(10):
        await arrived.wait()
    assert outbox.released


async def test_next_items_is_empty_only_once_released_with_nothing_left() -> None:
    """What the engine put before letting go is still handed out; after that the consumer is told,
    rather than parked for ever."""
    outbox = Outbox()
    outbox.put([_chunk("last")])
    threading.Thread(target=outbox.release).start()
    with anyio.fail_after(10):
        assert await outbox.next_items() == [_chunk("last")]
        assert await outbox.next_items() == []
        assert await outbox.next_items() == []


def test_a_wake_up_is_called_once_and_only_when_armed() -> None:
    outbox, calls = Outbox(), []
    outbox.put([_chunk("a")])  # nothing armed: nobody to wake
    assert outbox.take(lambda: calls.append(1)) == [_chunk("a")]  # items there: the wake is not armed
    outbox.put([_chunk("b")])
    assert calls == []
    assert outbox.take(lambda: calls.append(2)) == [_chunk("b")]
    assert outbox.take(lambda: calls.append(3)) == []  # armed
    outbox.put([_chunk("c")])
    outbox.put([_chunk("d")])
    outbox.release()
    assert calls == [3]


def test_a_consumer_whose_loop_has_ended_does_not_break_the_engine_thread() -> None:
    """The engine thread keeps going when the loop it would wake is gone (asyncio: 'Event loop is
    closed'; trio: RunFinishedError, also a RuntimeError)."""
    for backend in ("asyncio", "trio"):
        outbox = Outbox()

        async def park(outbox: Outbox = outbox) -> None:
            assert outbox.take(partial(loop_caller(), lambda: None)) == []

        anyio.run(park, backend=backend)
        outbox.put([_chunk("late")])
        outbox.release()
        assert outbox.take() == [_chunk("late")]


async def test_the_last_items_are_never_lost_to_a_release_that_follows_them_at_once() -> None:
    """The engine puts the terminal event and lets go just after the consumer found the outbox empty.
    Whether it was released is read with the items, so the consumer is never told 'released, nothing
    left' while the terminal event waits unread."""
    finished = Finished(reason="stop", prompt_tokens=1, cached_tokens=0, output_tokens=1)
    outbox, gone = Outbox(), threading.Event()
    real_take = outbox._take

    def engine() -> None:
        outbox.put([finished])
        outbox.release()
        gone.set()

    def take_then_let_the_engine_finish(wake: Wake | None) -> tuple[list[GenerationOutput], bool]:
        got = real_take(wake)
        if not gone.is_set():  # the first look found nothing: the engine ends in this very gap
            threading.Thread(target=engine).start()
            gone.wait(10)
        return got

    outbox._take = take_then_let_the_engine_finish  # type: ignore[method-assign]
    with anyio.fail_after(10):
        assert await outbox.next_items() == [finished]
        assert await outbox.next_items() == []
