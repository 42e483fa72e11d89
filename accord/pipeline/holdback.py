"""Partial-marker hold-back, shared by every parser (protocol.md B13).

When a chunk ends with text that could be the start of a marker (``"</th"`` of
``"</think>"``), that suffix must be held back until the next chunk decides it, and
released unchanged when it turns out not to be a marker. :func:`split_safe` does the
cut in O(len(longest marker)) per call, so a parser stays linear (SPEC P8).
"""

from __future__ import annotations

from collections.abc import Iterable


def partial_suffix_len(text: str, markers: Iterable[str]) -> int:
    """Length of the longest proper suffix of ``text`` that is a prefix of some marker."""
    best = 0
    for marker in markers:
        limit = min(len(marker) - 1, len(text))
        for size in range(limit, best, -1):
            if marker.startswith(text[len(text) - size :]):
                best = size
                break
    return best


def split_safe(text: str, markers: Iterable[str]) -> tuple[str, str]:
    """Split ``text`` into (safe to emit, held back because a marker may be starting)."""
    held = partial_suffix_len(text, markers)
    if held == 0:
        return text, ""
    return text[: len(text) - held], text[len(text) - held :]


def find_first(text: str, markers: Iterable[str], start: int = 0) -> tuple[int, str]:
    """Position and text of the earliest marker occurrence at or after ``start``; (-1, "") if none.

    At equal positions the longest marker wins.
    """
    best_pos, best_marker = -1, ""
    for marker in markers:
        pos = text.find(marker, start)
        if pos < 0:
            continue
        if best_pos < 0 or pos < best_pos or (pos == best_pos and len(marker) > len(best_marker)):
            best_pos, best_marker = pos, marker
    return best_pos, best_marker
