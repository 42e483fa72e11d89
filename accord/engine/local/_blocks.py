"""The paged KV cache: fixed-size blocks, reference counts, and an index of reusable prefix blocks.

Theory of operation. The cache is cut into blocks of ``block_size`` token positions. A running sequence
holds a list of blocks (its block table) with one reference on each. A block that is *full* is named by
the hash of its tokens chained with the hash of the block before it, so a name stands for the whole
prefix up to the block's end. When a new prompt starts with the same tokens, its first blocks are found
by name and shared instead of recomputed; that is where ``cached_tokens`` comes from.

A block whose last reference goes away stays in the index ("cached") and is only reused for something
else when no never-named block is left, least recently released first. Sequences release their blocks
last-to-first, so a prompt's tail is forgotten before its head, which more prompts share.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from accord.engine.local._heap import no_huge_pages

_ROOT = 0x5EED


def chain_hashes(
    tokens: Sequence[int], block_size: int, parent: int | None = None, start: int = 0
) -> list[int]:
    """Names of the full blocks of ``tokens`` from block index ``start`` on, continuing ``parent``."""
    names = []
    h = _ROOT if parent is None else parent
    for begin in range(start * block_size, len(tokens) - block_size + 1, block_size):
        h = hash((h, tuple(tokens[begin : begin + block_size])))
        names.append(h)
    return names


@dataclass(frozen=True, slots=True)
class PoolCounts:
    total: int
    free: int
    cached: int


class BlockPool:
    """Allocation, sharing and reuse of cache blocks. Used from the engine thread only."""

    def __init__(self, num_blocks: int, block_size: int) -> None:
        self.num_blocks = num_blocks
        self.block_size = block_size
        # A stack, so the blocks touched most recently are handed out again first and the memory
        # the cache actually occupies stays as small as the load allows.
        self._fresh = list(range(num_blocks - 1, -1, -1))
        self._refs = [0] * num_blocks
        self._name: list[int | None] = [None] * num_blocks
        self._index: dict[int, int] = {}
        self._cached: OrderedDict[int, None] = OrderedDict()

    def counts(self) -> PoolCounts:
        free = len(self._fresh) + len(self._cached)
        return PoolCounts(total=self.num_blocks, free=free, cached=len(self._cached))

    def available(self) -> int:
        """Blocks that an allocation may take right now (never named, or cached but unused)."""
        return len(self._fresh) + len(self._cached)

    def match(self, names: Sequence[int]) -> list[int]:
        """The blocks holding the longest run of ``names`` from the start (no references taken)."""
        found = []
        for name in names:
            block = self._index.get(name)
            if block is None:
                break
            found.append(block)
        return found

    def unreferenced(self, blocks: Sequence[int]) -> int:
        return sum(1 for b in blocks if self._refs[b] == 0)

    def share(self, blocks: Sequence[int]) -> None:
        """Take a reference on blocks found by :meth:`match`."""
        for b in blocks:
            if self._refs[b] == 0:
                del self._cached[b]
            self._refs[b] += 1

    def allocate(self, n: int) -> list[int] | None:
        """``n`` blocks with one reference each, or None (and nothing taken) if there are not enough."""
        if n > self.available():
            return None
        out = []
        for _ in range(n):
            if self._fresh:
                b = self._fresh.pop()
            else:
                b, _ = self._cached.popitem(last=False)
                name = self._name[b]
                if name is not None and self._index.get(name) == b:
                    del self._index[name]
                self._name[b] = None
            self._refs[b] = 1
            out.append(b)
        return out

    def name(self, block: int, name: int) -> None:
        """Record that ``block`` (now full) holds the prefix called ``name``; a first holder wins."""
        if name not in self._index and self._name[block] is None:
            self._index[name] = block
            self._name[block] = name

    def release(self, blocks: Sequence[int]) -> None:
        for b in reversed(blocks):
            self._refs[b] -= 1
            if self._refs[b] == 0:
                if self._name[b] is None:
                    self._fresh.append(b)
                else:
                    self._cached[b] = None

    def forget_prefixes(self) -> None:
        """Drop the prefix index: nothing is reused from before this call."""
        for b in self._cached:
            self._fresh.append(b)
        self._cached.clear()
        self._index.clear()
        self._name = [None] * self.num_blocks


class CacheStore(Protocol):
    """Where the blocks' keys and values live (``NativeCache`` here, or the torch path's ``KVCache``)."""

    block_size: int

    def clear(self, blocks: Sequence[int]) -> None:
        """Zero newly handed-out blocks: masked positions of a partly filled block must hold finite
        numbers, since zero attention weight times NaN is still NaN."""


class NativeCache:
    """The C step's keys and values: bf16 values as their ``uint16`` bit patterns, laid out
    ``[layers, 2, kv_heads, blocks, block_size, head_dim]``; the step alone reads and writes them, and
    stores each block's keys transposed ([head_dim, block_size]; see ``accord/kernels/csrc/forward.h``).
    """

    def __init__(self, n_layers: int, kv_heads: int, head_dim: int, num_blocks: int, block_size: int) -> None:
        # Uninitialised on purpose: pages are only committed when a block is first used, and they are
        # small pages, or the first block would commit 2 MiB in every layer (see ``_heap``).
        self.data = np.empty((n_layers, 2, kv_heads, num_blocks, block_size, head_dim), dtype=np.uint16)
        no_huge_pages(int(self.data.ctypes.data), self.data.nbytes)
        self.block_size = block_size

    def clear(self, blocks: Sequence[int]) -> None:
        if blocks:
            self.data[:, :, :, list(blocks)] = 0
