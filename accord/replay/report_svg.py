"""The timeline of one stream's events as an inline SVG (no script, no external resource).

One lane per kind of event: lifecycle (``response.*``), items and parts (``*.added``,
``output_item.done``, ``content_part.done``), deltas, text done-events, and anything else;
the x axis is the event's position in the stream. Events a defect names by number are
drawn red, so the eye finds where a stream went wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

LANES = ("lifecycle", "items", "deltas", "done", "other")
_COLOURS = {
    "lifecycle": "#4e79a7",
    "items": "#59a14f",
    "deltas": "#9c755f",
    "done": "#f28e2b",
    "other": "#bab0ac",
}
_LEFT, _RIGHT, _TOP, _LANE, _WIDTH = 80, 16, 12, 22, 880


def lane(kind: str) -> str:
    if (kind.startswith("response.") and kind.count(".") == 1) or kind == "error":
        return "lifecycle"
    if kind.endswith(".added") or kind in ("response.output_item.done", "response.content_part.done"):
        return "items"
    if kind.endswith(".delta"):
        return "deltas"
    if kind.endswith(".done"):
        return "done"
    return "other"


def timeline_svg(kinds: Sequence[str], flagged: frozenset[int] = frozenset()) -> str:
    """``kinds``: the event types in stream order; ``flagged``: 1-based event numbers to mark."""
    n = max(len(kinds), 1)
    height = _TOP + _LANE * len(LANES) + 24
    plot = _WIDTH - _LEFT - _RIGHT
    step = plot / n
    mark = max(2.0, min(10.0, step * 0.8))
    parts = [
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" role="img" aria-label="event timeline">'
    ]
    for i, name in enumerate(LANES):
        y = _TOP + i * _LANE
        parts.append(
            f'<text x="{_LEFT - 8}" y="{y + _LANE / 2 + 4:.1f}" text-anchor="end" '
            f'font-size="11" fill="#333">{name}</text>'
            f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{y + _LANE / 2:.1f}" y2="{y + _LANE / 2:.1f}" '
            'stroke="#eee"/>'
        )
    for index, kind in enumerate(kinds):
        number = index + 1
        row = LANES.index(lane(kind))
        x = _LEFT + index * step
        y = _TOP + row * _LANE + 4
        colour = "#d62728" if number in flagged else _COLOURS[LANES[row]]
        parts.append(
            f'<rect class="event" x="{x:.2f}" y="{y}" width="{mark:.2f}" height="{_LANE - 8}" '
            f'fill="{colour}"><title>{number}: {escape(kind)}</title></rect>'
        )
    axis_y = _TOP + _LANE * len(LANES) + 14
    for number in sorted({1, (n + 1) // 2, n}):
        x = _LEFT + (number - 1) * step
        parts.append(
            f'<text x="{x:.1f}" y="{axis_y}" font-size="10" fill="#666" text-anchor="middle">{number}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
