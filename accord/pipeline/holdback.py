"""Partial-marker hold-back, shared by every parser (docs/model-formats.md B13).

When a chunk ends with text that could be the start of a marker (``"</th"`` of
``"</think>"``), that suffix must be held back until the next chunk decides it, and
released unchanged when it turns out not to be a marker. :func:`split_safe` does the
cut in O(len(longest marker)) per call, so a parser stays linear (SPEC P8).
:class:`MarkerSet` does the same for a fixed marker set with less work per chunk, and finds the
next marker of the set in one regex search; a parser that starts each search where the last
marker ended reads a whole output once (measured 4x faster than one ``str.find`` per marker
on a 1 MB GLM output, and 5x on a sparse one).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable


def partial_suffix_len(text: str, markers: Iterable[str]) -> int:
    """Length of the longest proper suffix of ``text`` that is a prefix of some marker."""
    best = 0
    n = len(text)
    for marker in markers:
        if not marker:
            continue
        # Candidates start where the marker's first character occurs within the last
        # len(marker) - 1 characters; str.find walks them in C, earliest (longest) first.
        first = marker[0]
        pos = text.find(first, max(n - len(marker) + 1, 0))
        while pos >= 0 and n - pos > best:
            if marker.startswith(text[pos:]):
                best = n - pos
                break
            pos = text.find(first, pos + 1)
    return best


def split_safe(text: str, markers: Iterable[str]) -> tuple[str, str]:
    """Split ``text`` into (safe to emit, held back because a marker may be starting)."""
    held = partial_suffix_len(text, markers)
    if held == 0:
        return text, ""
    return text[: len(text) - held], text[len(text) - held :]


def find_first(text: str, markers: Iterable[str], start: int = 0, end: int | None = None) -> tuple[int, str]:
    """Position and text of the earliest marker occurrence in ``text[start:end]``; (-1, "") if none.

    At equal positions the longest marker wins.
    """
    best_pos, best_marker = -1, ""
    for marker in markers:
        pos = text.find(marker, start, end)
        if pos < 0:
            continue
        if best_pos < 0 or pos < best_pos or (pos == best_pos and len(marker) > len(best_marker)):
            best_pos, best_marker = pos, marker
    return best_pos, best_marker


class MarkerSet:
    """A fixed set of markers, with what the per-chunk checks need computed once.

    ``partial_len`` answers what :func:`partial_suffix_len` answers, but by looking only at
    the marker's first characters within the last ``longest - 1`` characters and checking
    a candidate suffix against a set of every proper marker prefix: one hash per candidate
    instead of one comparison per marker and size. Parsers fed 4-character chunks call it
    on nearly every chunk, so this is where their streaming cost goes.
    """

    def __init__(self, markers: Iterable[str]) -> None:
        self.markers = tuple(m for m in markers if m)
        self.longest = max((len(m) for m in self.markers), default=0)
        #: The distinct first characters, as a string (usually one character: ``<`` or ``[``).
        self.firsts = "".join(sorted({m[0] for m in self.markers}))
        #: Every proper prefix of a marker: text that must be held back whole.
        self.prefixes = frozenset(m[:k] for m in self.markers for k in range(1, len(m)))
        # Longest first: at one position the alternation takes the first that matches.
        by_length = sorted(set(self.markers), key=len, reverse=True)
        # (An empty set gets a pattern that never matches.)
        pattern = re.compile("|".join(map(re.escape, by_length)) if by_length else "(?!)")
        #: ``search(text, start)``: the match of the earliest marker (longest at a tie), or None.
        self.search = pattern.search
        self._held_whole: dict[tuple[str, ...], frozenset[str]] = {}

    def held_whole(self, searched: Iterable[str] | None = None) -> frozenset[str]:
        """The proper marker prefixes that hold no whole marker of ``searched`` (default: this set).

        A chunk (with what was held before it) that is one of these is what a scan would find no
        marker in and hold back entirely, so a parser may hold it without scanning. The filter
        matters where one marker begins another.
        """
        whole = self.markers if searched is None else tuple(searched)
        held = self._held_whole.get(whole)
        if held is None:
            held = self._held_whole[whole] = frozenset(
                p for p in self.prefixes if not any(m in p for m in whole)
            )
        return held

    def find(self, text: str, start: int = 0, end: int | None = None) -> tuple[int, str]:
        """What :func:`find_first` answers for ``text[start:end]``: one ``str.find`` for a single
        marker, else one regex search (a few times faster than ``find_first`` on a short text)."""
        if len(self.markers) == 1:
            only = self.markers[0]
            k = text.find(only, start, end)
            return (k, only) if k >= 0 else (-1, "")
        match = self.search(text, start, len(text) if end is None else end)
        return (-1, "") if match is None else (match.start(), match.group())

    def may_occur_in(self, text: str) -> bool:
        """False when no marker can start in ``text`` (none of their first characters is in it)."""
        return any(c in text for c in self.firsts)

    def partial_len(self, text: str, start: int = 0) -> int:
        """Length of the longest suffix of ``text[start:]`` that is a proper prefix of a marker."""
        n = len(text)
        lo = max(start, n - self.longest + 1)
        best = 0
        for first in self.firsts:
            pos = text.find(first, lo)
            while pos >= 0 and n - pos > best:
                if text[pos:] in self.prefixes:
                    best = n - pos
                    break
                pos = text.find(first, pos + 1)
        return best


@functools.cache
def marker_set(markers: tuple[str, ...]) -> MarkerSet:
    """The :class:`MarkerSet` of ``markers``, built once: parsers are made per request, from a
    few fixed marker sets per family, and building one costs more than a short response's parse."""
    return MarkerSet(markers)


__all__ = ["MarkerSet", "find_first", "marker_set", "partial_suffix_len", "split_safe"]
