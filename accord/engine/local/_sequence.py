"""One request inside the engine: its tokens, its blocks, and how its text is released.

Text leaves a sequence through two hold-backs: the UTF-8 decoder keeps a character split across tokens
until it is whole, and the stop-string matcher keeps any tail of the text that could still become a stop
string. A chunk is emitted only when some text is released; it carries the ids of every token consumed
since the previous chunk, so token ids and text stay in step.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from accord.engine.local._outbox import Outbox
from accord.engine.local._tokenizer import Detokenizer
from accord.events.generation import Chunk, Finished, FinishReason, GenerationOutput
from accord.kernels.noise import SamplingRow

if TYPE_CHECKING:
    from accord.engine.local._grammar import Matcher


class StopMatcher:
    """Finds the first stop string in streamed text, releasing only text that cannot start one.

    "First" means first completed: the result is the same however the text is cut into pieces.
    """

    def __init__(self, stops: tuple[str, ...]) -> None:
        self._stops = tuple(s for s in stops if s)
        self._held = ""
        self.stopped = False
        #: The stop string the text was cut at.
        self.matched: str | None = None

    def feed(self, text: str) -> str:
        if not self._stops:
            return text
        held = self._held + text
        # Generation would have stopped where the first stop string was completed, whatever came after
        # in this piece; if two complete there, the longer one (starting earlier) is cut.
        hits = [(i + len(s), i, s) for s in self._stops if (i := held.find(s)) >= 0]
        if hits:
            _, start, self.matched = min(hits)
            self.stopped = True
            self._held = ""
            return held[:start]
        keep = 0
        for stop in self._stops:
            for n in range(min(len(stop) - 1, len(held)), keep, -1):
                if held.endswith(stop[:n]):
                    keep = n
                    break
        self._held = held[len(held) - keep :]
        return held[: len(held) - keep]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held


class Phase(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    DONE = "done"


@dataclass(eq=False)
class Sequence:
    request_id: str
    prompt_len: int
    #: Prompt and generated tokens; KV is in the cache for the first ``computed`` of them.
    tokens: list[int]
    #: Most tokens this request may generate (its max_tokens, capped by the context).
    max_new: int
    sampling: SamplingRow
    stop_ids: frozenset[int]
    detokenizer: Detokenizer
    stops: StopMatcher
    outbox: Outbox
    #: The request's stops that are special tokens, by id (they end it as ``stop_ids`` do).
    stop_tokens: dict[int, str] = field(default_factory=dict)
    phase: Phase = Phase.WAITING
    blocks: list[int] = field(default_factory=list)
    #: Names of the full blocks of ``tokens`` (see ``chain_hashes``), computed as far as needed.
    names: list[int] = field(default_factory=list)
    #: How many of ``blocks`` are registered in the prefix index.
    named: int = 0
    computed: int = 0
    #: Prompt tokens found in the prefix cache at first admission.
    cached_tokens: int | None = None
    pending_ids: list[int] = field(default_factory=list)
    #: The grammar this request's tokens must follow (constrained decoding), if any.
    matcher: Matcher | None = None

    @property
    def generated(self) -> int:
        return len(self.tokens) - self.prompt_len

    @property
    def decoding(self) -> bool:
        """Everything but the last sampled token is in the cache: the next step is one decode row."""
        return self.computed == len(self.tokens) - 1 and self.generated > 0

    def sampling_row(self) -> SamplingRow:
        s = self.sampling
        return SamplingRow(s.temperature, s.top_p, s.top_k, s.seed, step=self.generated)

    def accept(self, token: int) -> list[GenerationOutput]:
        """Record a sampled token; the events it releases, ending with ``Finished`` if it ends the request."""
        self.tokens.append(token)
        if self.matcher is not None:
            self.matcher.accept(token)
        out: list[GenerationOutput] = []
        if token in self.stop_ids or token in self.stop_tokens:
            return self._finish("stop", out, self.stop_tokens.get(token))
        self.pending_ids.append(token)
        text = self.stops.feed(self.detokenizer.feed(token))
        self._emit(text, out)
        if self.stops.stopped:
            return self._finish("stop", out)
        if self.generated >= self.max_new:
            return self._finish("length", out)
        return out

    def _emit(self, text: str, out: list[GenerationOutput]) -> None:
        if text:
            out.append(Chunk(text=text, token_ids=tuple(self.pending_ids)))
            self.pending_ids = []

    def _finish(
        self, reason: FinishReason, out: list[GenerationOutput], matched: str | None = None
    ) -> list[GenerationOutput]:
        if not self.stops.stopped:
            tail = self.stops.feed(self.detokenizer.flush())
            self._emit(tail if self.stops.stopped else tail + self.stops.flush(), out)
            if self.stops.stopped:
                reason = "stop"
        self.phase = Phase.DONE
        out.append(
            Finished(
                reason=reason,
                prompt_tokens=self.prompt_len,
                cached_tokens=self.cached_tokens or 0,
                output_tokens=self.generated,
                stop_sequence=self.stops.matched or matched,
            )
        )
        return out
