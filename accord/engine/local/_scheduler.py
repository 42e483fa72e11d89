"""Continuous batching: which sequences run in the next step, and with how many tokens each.

Strategy. Every step carries one decode row for each running sequence that is generating, plus prompt
chunks, then admits waiting requests while the batch and the cache have room. Requests join and leave
between any two steps.

- A prompt is processed in chunks of ``chunk_tokens`` (the last one up to a quarter longer rather than
  a short tail of its own), cut from where its cached prefix ends -- so how a prompt is split depends on
  the prompt alone, never on what else is running. At most about ``chunk_tokens`` prompt tokens go into
  one step, so decode rows keep moving while a long prompt loads.
- Admission takes blocks for the whole prompt at once (a prompt never stalls half-loaded); generation
  takes one block at a time. When a generating sequence needs a block and none is left, the most recently
  admitted sequence is preempted: its blocks are released (its full blocks stay in the prefix index) and
  it goes back to the front of the queue, to be recomputed -- mostly from the cache -- when room returns.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from accord.engine.local._blocks import BlockPool, CacheStore, chain_hashes
from accord.engine.local._sequence import Phase, Sequence


@dataclass(frozen=True, slots=True)
class Work:
    """Rows ``tokens[start : start + length]`` of ``seq`` in this step."""

    seq: Sequence
    start: int
    length: int
    #: Whether the work reaches the sequence's last token, so a new token is sampled from it.
    samples: bool


def _work(seq: Sequence, length: int) -> Work:
    return Work(seq, seq.computed, length, seq.computed + length == len(seq.tokens))


class Scheduler:
    def __init__(self, pool: BlockPool, cache: CacheStore, *, max_batch: int, chunk_tokens: int) -> None:
        self.pool = pool
        self.cache = cache
        self.max_batch = max_batch
        self.chunk_tokens = chunk_tokens
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.prefix_hit_tokens = 0
        self.prompt_tokens = 0
        self.preemptions = 0

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def remove(self, seq: Sequence) -> None:
        """Take ``seq`` out (finished or abandoned) and release its blocks."""
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        self.pool.release(seq.blocks)
        seq.blocks = []
        seq.phase = Phase.DONE

    def schedule(self) -> list[Work]:
        work: list[Work] = []
        preempted = self._grow_decoders()
        for seq in self.running:
            if seq.decoding:
                work.append(_work(seq, 1))
        budget = self.chunk_tokens
        prefilling = False
        for seq in self.running:
            if seq.decoding:
                continue
            length = self._chunk(seq)
            if prefilling and length > budget:
                continue
            work.append(_work(seq, length))
            budget -= length
            prefilling = True
        while not preempted and self.waiting and len(self.running) < self.max_batch and budget > 0:
            seq = self.waiting[0]
            if not self._admit(seq):
                break
            self.waiting.popleft()
            length = self._chunk(seq)
            if prefilling and length > budget:
                break  # admitted with its blocks; its first chunk runs next step
            work.append(_work(seq, length))
            budget -= length
            prefilling = True
        return work

    def _chunk(self, seq: Sequence) -> int:
        """The next chunk of ``seq``'s prompt: ``chunk_tokens``, or all that is left if the rest would
        be a short tail (every prompt step pays for dequantising the weights, whatever its size)."""
        left = len(seq.tokens) - seq.computed
        return left if left <= self.chunk_tokens + self.chunk_tokens // 4 else self.chunk_tokens

    def _grow_decoders(self) -> bool:
        """Give each generating sequence room for its next token, preempting if the cache is full."""
        preempted = False
        i = 0
        while i < len(self.running):
            seq = self.running[i]
            if not seq.decoding or seq.computed < len(seq.blocks) * self.pool.block_size:
                i += 1
                continue
            block = self.pool.allocate(1)
            if block is not None:
                self.cache.clear(block)
                seq.blocks.extend(block)
                i += 1
                continue
            victim = self.running.pop()
            self._preempt(victim)
            preempted = True
        return preempted

    def _preempt(self, seq: Sequence) -> None:
        self.pool.release(seq.blocks)
        seq.blocks = []
        seq.named = 0
        seq.computed = 0
        seq.phase = Phase.WAITING
        self.waiting.appendleft(seq)
        self.preemptions += 1

    def _admit(self, seq: Sequence) -> bool:
        bs = self.pool.block_size
        full = len(seq.tokens) // bs
        if len(seq.names) < full:
            parent = seq.names[-1] if seq.names else None
            seq.names.extend(chain_hashes(seq.tokens, bs, parent, start=len(seq.names)))
        # At least the last token is always computed: its logits choose the next token.
        usable = (len(seq.tokens) - 1) // bs
        hits = self.pool.match(seq.names[:usable])
        needed = -(-len(seq.tokens) // bs) - len(hits)
        if needed + 1 > self.pool.available() - self.pool.unreferenced(hits):
            return False
        self.pool.share(hits)
        fresh = self.pool.allocate(needed)
        assert fresh is not None
        self.cache.clear(fresh)
        seq.blocks = hits + fresh
        seq.named = len(hits)
        seq.computed = len(hits) * bs
        if seq.cached_tokens is None:
            seq.cached_tokens = seq.computed
            self.prefix_hit_tokens += seq.computed
            self.prompt_tokens += seq.prompt_len
        seq.phase = Phase.RUNNING
        self.running.append(seq)
        return True

    def advance(self, work: list[Work]) -> None:
        """After a step: the work's tokens are in the cache; name the blocks that became full."""
        bs = self.pool.block_size
        for w in work:
            seq = w.seq
            seq.computed = w.start + w.length
            full = seq.computed // bs
            if full > len(seq.names):
                parent = seq.names[-1] if seq.names else None
                seq.names.extend(chain_hashes(seq.tokens[: full * bs], bs, parent, start=len(seq.names)))
            while seq.named < full:
                self.pool.name(seq.blocks[seq.named], seq.names[seq.named])
                seq.named += 1
