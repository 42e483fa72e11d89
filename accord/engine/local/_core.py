"""The engine thread: admits requests, runs model steps back to back, hands out their tokens.

Theory of operation. One thread owns the scheduler, the block pool and the model; nothing else touches
them. Other threads talk to it through three lists guarded by one condition variable -- new sequences,
abandoned sequences, and commands -- and read its state only through the immutable statistics record it
publishes after every step. Results travel back through each sequence's :class:`Outbox`.

Order of effects after a step: blocks of finished or abandoned sequences are released, then statistics
are published, then events are handed out and outboxes released. So a consumer that has seen its request
end (or waited for its cancellation to be acknowledged) also sees the blocks freed in ``statistics()``.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from accord.engine.local._grammar import apply_masks
from accord.engine.local._heap import release_freed_memory
from accord.engine.local._scheduler import Scheduler, Work
from accord.engine.local._sequence import Phase, Sequence
from accord.events.generation import EngineFailed, GenerationOutput
from accord.kernels.noise import SamplingRow

log = structlog.get_logger("accord.engine.local")


class StepInput(Protocol):
    @property
    def sampled(self) -> list[Work]:
        """The work whose next token the step chooses, in the order of the logits' rows."""


class StepModel(Protocol):
    """What the engine thread runs: ``NativeModel`` (the C path, numpy logits) or ``LlamaModel``
    (torch). ``forward`` gives float32 logits, one row per ``batch(...).sampled``."""

    def batch(self, work: list[Work]) -> StepInput: ...

    def forward(self, batch: Any) -> Any: ...

    def sample(self, logits: Any, rows: list[SamplingRow]) -> list[int]: ...


#: Builds the model and its scheduler, on the engine thread.
Setup = Callable[[], tuple[StepModel, Scheduler]]


@dataclass(frozen=True, slots=True)
class EngineStatistics:
    """A snapshot of the embedded engine's state."""

    block_size: int
    blocks_total: int
    #: Blocks no running request holds (including the cached ones).
    blocks_free: int
    #: Free blocks that still hold a reusable prompt prefix.
    blocks_cached: int
    #: Blocks held by running requests.
    blocks_in_use: int
    running: int
    waiting: int
    #: Prompt tokens served from the prefix cache, and prompt tokens admitted, since start.
    prefix_hit_tokens: int
    prompt_tokens: int
    preemptions: int
    steps: int


class EngineCore:
    """Starts the engine thread, which first runs ``setup`` to build the model, then serves requests.

    All model work happens on that one thread, the model build included. Every thread that runs
    parallel torch ops gets its own OpenMP team; measured on two cores, once a second thread had one, the
    engine thread's small ops ran about as slowly as on one core (likely workers sleeping between ops
    rather than spinning, with more OpenMP threads than cores) and single-stream decoding lost a third of
    its speed. Building on the engine thread leaves it the only team.
    """

    def __init__(self, setup: Setup) -> None:
        self._cond = threading.Condition()
        self._incoming: list[Sequence] = []
        self._abandoned: list[Sequence] = []
        self._commands: list[Callable[[], None]] = []
        self._closing = False
        self._steps = 0
        self._ready = threading.Event()
        self._setup_error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._main, args=(setup,), name="accord-local-engine", daemon=True
        )
        self._thread.start()
        self._ready.wait()
        if self._setup_error is not None:
            self._thread.join()
            raise self._setup_error

    # -- called from any thread -------------------------------------------------------------------

    def submit(self, seq: Sequence) -> None:
        with self._cond:
            if self._closing:
                seq.outbox.put([EngineFailed(failure="engine_error", message="The engine is shut down.")])
                seq.outbox.release()
                return
            self._incoming.append(seq)
            self._cond.notify()

    def abandon(self, seq: Sequence) -> None:
        """Stop ``seq`` and free what it holds; its outbox is released once that is done."""
        with self._cond:
            if self._closing:  # the engine thread is gone or going, and freed everything
                seq.outbox.release()
                return
            self._abandoned.append(seq)
            self._cond.notify()

    def command(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the engine thread before any request submitted after this call starts."""
        with self._cond:
            self._commands.append(fn)
            self._cond.notify()

    def statistics(self) -> EngineStatistics:
        return self._stats

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join()

    # -- the engine thread ------------------------------------------------------------------------

    def _snapshot(self) -> EngineStatistics:
        sch = self._scheduler
        counts = sch.pool.counts()
        return EngineStatistics(
            block_size=sch.pool.block_size,
            blocks_total=counts.total,
            blocks_free=counts.free,
            blocks_cached=counts.cached,
            blocks_in_use=counts.total - counts.free,
            running=len(sch.running),
            waiting=len(sch.waiting),
            prefix_hit_tokens=sch.prefix_hit_tokens,
            prompt_tokens=sch.prompt_tokens,
            preemptions=sch.preemptions,
            steps=self._steps,
        )

    def _main(self, setup: Setup) -> None:
        try:
            self._model, self._scheduler = setup()
            self._stats = self._snapshot()
        except BaseException as exc:  # handed to the thread that called load()
            self._setup_error = exc
            return
        finally:
            self._ready.set()
        self._run()

    def _run(self) -> None:
        stalled = False
        while True:
            with self._cond:
                while not (
                    self._incoming
                    or self._abandoned
                    or self._commands
                    or self._closing
                    or (self._scheduler.has_work() and not stalled)
                ):
                    self._cond.wait()
                incoming, self._incoming = self._incoming, []
                abandoned, self._abandoned = self._abandoned, []
                commands, self._commands = self._commands, []
                closing = self._closing
            try:
                stalled = self._iteration(incoming, abandoned, commands, closing)
            except Exception as exc:  # a bug must not leave every stream waiting forever
                log.error("engine loop failed", error=repr(exc), traceback=traceback.format_exc())
                self._fail_everything(abandoned, f"{type(exc).__name__}: {exc}")
                stalled = False
            if closing:
                return

    def _iteration(
        self,
        incoming: list[Sequence],
        abandoned: list[Sequence],
        commands: list[Callable[[], None]],
        closing: bool,
    ) -> bool:
        """One round: apply what other threads asked for, run a step, hand out the results.

        Returns whether the loop is stalled (work exists but none could be scheduled: the queue head
        waits for blocks that only a cancellation can free), so it sleeps instead of spinning.
        """
        for seq in incoming:
            self._scheduler.add(seq)
        for seq in abandoned:
            if seq.phase is not Phase.DONE:
                self._scheduler.remove(seq)
        for fn in commands:  # before the step, so they apply to every request submitted after them
            fn()
        if closing:
            self._fail_everything(abandoned, "The engine is shut down.")
            return False
        ran, deliveries = self._step()
        self._stats = self._snapshot()
        for seq in abandoned:
            seq.outbox.release()
        for seq, events in deliveries:
            seq.outbox.put(events)
            if seq.phase is Phase.DONE:
                seq.outbox.release()
        if ran and not self._scheduler.has_work():
            release_freed_memory()  # out of work: what the steps' buffers left goes back (see _heap)
        return not ran

    def _step(self) -> tuple[bool, list[tuple[Sequence, list[GenerationOutput]]]]:
        work = self._scheduler.schedule()
        if not work:
            return False, []
        try:
            batch = self._model.batch(work)
            logits = self._model.forward(batch)
            self._scheduler.advance(work)
            apply_masks(logits, [w.seq.matcher for w in batch.sampled])
            tokens = self._model.sample(logits, [w.seq.sampling_row() for w in batch.sampled])
        except Exception as exc:  # a failed step fails the requests in it, not the engine
            log.error(
                "engine step failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()
            )
            failed = {id(w.seq): w.seq for w in work}
            out: list[tuple[Sequence, list[GenerationOutput]]] = []
            for seq in failed.values():
                self._scheduler.remove(seq)
                message = f"{type(exc).__name__}: {exc}"
                out.append(
                    (
                        seq,
                        [EngineFailed(failure="engine_error", message=message, prompt_tokens=seq.prompt_len)],
                    )
                )
            return True, out
        self._steps += 1
        deliveries = []
        for w, token in zip(batch.sampled, tokens, strict=True):
            events = w.seq.accept(token)
            if w.seq.phase is Phase.DONE:
                self._scheduler.remove(w.seq)
            deliveries.append((w.seq, events))
        return True, deliveries

    def _fail_everything(self, abandoned: list[Sequence], message: str) -> None:
        pending = [*self._scheduler.running, *self._scheduler.waiting]
        for seq in pending:
            self._scheduler.remove(seq)
        self._stats = self._snapshot()
        for seq in abandoned:
            seq.outbox.release()
        for seq in pending:
            seq.outbox.put(
                [EngineFailed(failure="engine_error", message=message, prompt_tokens=seq.prompt_len)]
            )
            seq.outbox.release()
