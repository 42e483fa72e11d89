"""Earliest-marker search over one buffer that never scans the same text twice per marker.

Calling ``str.find`` for every marker from every position re-reads the text up to each
marker's next occurrence again and again: with a marker that never occurs, a whole 1 MB
output with thousands of calls costs thousands of full scans. :class:`MarkerFinder`
remembers each marker's next occurrence and looks again only once the search has passed
it, so one buffer costs one scan per marker (SPEC P8).
"""

from __future__ import annotations


class MarkerFinder:
    """``find(start)``: the earliest marker at or after ``start`` (longest at a tie)."""

    __slots__ = ("_markers", "_next", "_text")

    def __init__(self, text: str, markers: tuple[str, ...]) -> None:
        self._text = text
        self._markers = markers
        self._next = [-2] * len(markers)

    def find(self, start: int) -> tuple[int, str]:
        """Position and marker; ``(-1, "")`` when none occurs at or after ``start``.

        ``start`` may move back only to a position no earlier than that of a previous call.
        """
        best, found = -1, ""
        nxt = self._next
        for k, marker in enumerate(self._markers):
            pos = nxt[k]
            if pos != -1 and pos < start:
                pos = nxt[k] = self._text.find(marker, start)
            if pos >= 0 and (best < 0 or pos < best or (pos == best and len(marker) > len(found))):
                best, found = pos, marker
        return best, found


__all__ = ["MarkerFinder"]
