"""Closing a constrained output within its token budget (see ``_grammar``'s module docstring).

The engine looks ahead from a request's grammar state for the shortest way to finish the output
(end the open string, close what is open, write what the schema still requires, then a stop
token), and steers by it near the end of the budget:

- once the budget left is within an eighth of the whole, or within the shortest finish plus a
  margin, the longest token that closes is taken wherever the grammar allows one (a ``"`` that ends
  the string being written, or ``]`` and ``}`` outside a string), and the model writes the rest;
- once the budget left is within the margin of the shortest finish, the finish is followed token by
  token (the model's own choices there, a number written as ``1e+0``, could lengthen it past the end).

Until then nothing is changed. Where a string is open is read from the bytes accepted so far: the
grammar writes no whitespace between JSON tokens, so a ``"`` outside a string always opens one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: Look-ahead is given up past this many tokens (the finish is then just preferred, not forced).
LOOKAHEAD_LIMIT = 96
#: Start closing this many tokens before the shortest finish would no longer fit.
MARGIN = 8
#: How often the shortest finish is measured while the budget is still far from it.
MEASURE_EVERY = 8


def closing_reserve(budget: int) -> int:
    """How many of a ``budget``'s last tokens are spent closing, at the least."""
    return min(max(16, budget // 8), budget // 2)


@dataclass(slots=True)
class StringState:
    """Whether the bytes so far leave a JSON string open (and an escape pending in it)."""

    open: bool = False
    escaped: bool = False

    def feed(self, data: bytes) -> None:
        for byte in data:
            if self.escaped:
                self.escaped = False
            elif self.open and byte == 0x5C:  # backslash
                self.escaped = True
            elif byte == 0x22:  # quote
                self.open = not self.open

    def copy(self) -> StringState:
        return StringState(self.open, self.escaped)


def _longest_first(vocab: list[bytes], keep: Callable[[bytes], bool]) -> npt.NDArray[np.int64]:
    ids = [i for i, b in enumerate(vocab) if b and keep(b)]
    return np.array(sorted(ids, key=lambda i: -len(vocab[i])), dtype=np.int64)


@dataclass(frozen=True, slots=True)
class ClosingTokens:
    """Per-vocabulary tables, read against xgrammar's packed masks (32 tokens a word).

    Each table holds token ids longest first, so the first allowed one closes or writes the most.
    """

    #: Tokens that start with ``"`` and hold only ``"``, ``]`` and ``}``: they end an open string.
    end_string: npt.NDArray[np.int64]
    #: Tokens of only ``]`` and ``}``: they close outside a string.
    close_brackets: npt.NDArray[np.int64]
    #: Each token's length in bytes (0 for those without bytes).
    lengths: npt.NDArray[np.int32]
    stop_ids: npt.NDArray[np.int64]

    @classmethod
    def build(cls, vocab: list[bytes], stop_ids: list[int]) -> ClosingTokens:
        closing, brackets = set(b'"]}'), set(b"]}")
        return cls(
            end_string=_longest_first(vocab, lambda b: b[0] == 0x22 and set(b) <= closing),
            close_brackets=_longest_first(vocab, lambda b: set(b) <= brackets),
            lengths=np.array([len(b) for b in vocab], dtype=np.int32),
            stop_ids=np.array(stop_ids, dtype=np.int64),
        )

    def closers(self, words: npt.NDArray[np.int32], state: StringState) -> npt.NDArray[np.int64]:
        """The allowed tokens that close from ``state``, longest first (``words``: one packed mask)."""
        table = self.end_string if state.open else self.close_brackets
        return table[_allowed(words, table)]

    def shortest_step(self, words: npt.NDArray[np.int32], state: StringState) -> int | None:
        """The next token of a short finish: a stop token, else the longest closer, else the longest
        allowed token (which writes a required key or value whole where the vocabulary has it).
        Greedy, so the finish it traces is an upper bound on the fewest tokens; ``None``: no token."""
        stops = self.stop_ids[_allowed(words, self.stop_ids)]
        if stops.size:
            return int(stops[0])
        closers = self.closers(words, state)
        if closers.size:
            return int(closers[0])
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")[: self.lengths.shape[0]]
        ids = np.flatnonzero(bits)
        return int(ids[self.lengths[ids].argmax()]) if ids.size else None


def _allowed(words: npt.NDArray[np.int32], ids: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    bits: npt.NDArray[np.bool_] = ((words[ids >> 5] >> (ids & 31)) & 1).astype(bool)
    return bits
