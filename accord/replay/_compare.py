"""Comparing a replayed response with its recording.

What may differ between two runs of the same engine output without anything having changed is removed
first: wall-clock timestamps, ``encrypted_content`` (sealed with a fresh nonce, and only when the
server has a key), and keepalives (they depend on how long the engine was silent, which a replay does
not reproduce) -- after which the sequence numbers are counted again. Everything else must be equal.
"""

from __future__ import annotations

from typing import Any

_CLOCK_KEYS = frozenset({"created_at", "completed_at"})
_SEALED_KEYS = frozenset({"encrypted_content"})


def scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (0 if k in _CLOCK_KEYS else scrub(v)) for k, v in value.items() if k not in _SEALED_KEYS}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def comparable_stream(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keepalives dropped (``response.in_progress`` after the opening pair), numbers recounted."""
    kept = [e for i, e in enumerate(events) if not (i >= 2 and e.get("type") == "response.in_progress")]
    # Only events that carry a response or an item can hold clocks or seals; deltas are copied flat.
    return [
        {**(scrub(e) if "response" in e or "item" in e else e), "sequence_number": n}
        for n, e in enumerate(kept)
    ]


def comparable_response(response: dict[str, Any] | None, *, usage: bool = True) -> dict[str, Any] | None:
    if response is None:
        return None
    scrubbed: dict[str, Any] = scrub(response)
    if not usage:
        scrubbed.pop("usage", None)
    return scrubbed


def difference(recorded: Any, replayed: Any, path: str = "") -> str | None:
    """Where two JSON values first differ, in words; ``None`` when equal."""
    if recorded == replayed:
        return None
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        for key in list(recorded) + [k for k in replayed if k not in recorded]:
            if key not in replayed:
                return f"{path}.{key}: recorded only"
            if key not in recorded:
                return f"{path}.{key}: replayed only"
            found = difference(recorded[key], replayed[key], f"{path}.{key}")
            if found is not None:
                return found
    if isinstance(recorded, list) and isinstance(replayed, list):
        for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)):
            found = difference(a, b, f"{path}[{i}]")
            if found is not None:
                return found
        return f"{path}: {len(recorded)} recorded vs {len(replayed)} replayed"
    return f"{path or '.'}: recorded {_short(recorded)}, replayed {_short(replayed)}"


def stream_difference(
    recorded: list[dict[str, Any]], replayed: list[dict[str, Any]], *, prefix_only: bool
) -> str | None:
    """Compare two streams event by event; with ``prefix_only`` the recording may stop early (a hang-up)."""
    a, b = comparable_stream(recorded), comparable_stream(replayed)
    if prefix_only:
        b = b[: len(a)]
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        found = difference(x, y)
        if found is not None:
            return f"event {i} ({x.get('type')}): {found}"
    if len(a) != len(b):
        return f"{len(a)} events recorded, {len(b)} replayed"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
