"""The census over many audited streams: per defect class, how many of how many units.

Item-level classes count distinct items (two broken slots of one reasoning item are one reasoning item
with its tail lost); stream- and response-level classes count each stream once.
"""

from __future__ import annotations

from typing import TextIO

import msgspec

from accord.replay.defects import DEFECT_CLASSES, Unit
from accord.replay.verdict import Verdict

_STREAM_UNITS: frozenset[Unit] = frozenset({"streams", "responses"})


class ClassCount(msgspec.Struct, kw_only=True):
    code: str
    title: str
    unit: Unit
    affected: int
    of: int
    percent: float


class Census(msgspec.Struct, kw_only=True):
    inputs: int = 0
    streams: int = 0
    responses: int = 0
    sound: int = 0
    defective: int = 0
    unreadable: int = 0
    skipped: int = 0
    sdk_breaks: int = 0
    units: dict[str, int] = msgspec.field(default_factory=dict)
    reasoning_chars: int = 0
    reasoning_chars_lost: int = 0
    classes: list[ClassCount] = msgspec.field(default_factory=list)


def affected_units(verdict: Verdict, code: str) -> int:
    """How many census units of ``code``'s class this verdict has affected."""
    unit = DEFECT_CLASSES[code].unit
    found = [d for d in verdict.defects if d.code == code]
    if not found:
        return 0
    if unit in _STREAM_UNITS:
        return 1
    return len({d.output_index for d in found})


def take_census(verdicts: list[Verdict]) -> Census:
    census = Census(inputs=len(verdicts))
    affected: dict[str, int] = {}
    for v in verdicts:
        if v.status == "unreadable":
            census.unreadable += 1
            continue
        if v.status == "skipped":
            census.skipped += 1
            continue
        census.sound += v.status == "sound"
        census.defective += v.status == "defective"
        census.sdk_breaks += v.breaks_sdk
        for unit, count in v.units.items():
            census.units[unit] = census.units.get(unit, 0) + count
        census.reasoning_chars += v.reasoning_chars
        # Lost characters per reasoning item: the largest loss any of its slots shows.
        lost_by_item: dict[int | None, int] = {}
        for d in v.defects:
            if d.code == "reasoning_tail_lost":
                lost_by_item[d.output_index] = lost_by_item.get(d.output_index, 0) + d.lost_chars
        census.reasoning_chars_lost += sum(lost_by_item.values())
        for code in v.codes():
            affected[code] = affected.get(code, 0) + affected_units(v, code)
    census.streams = census.units.get("streams", 0)
    census.responses = census.units.get("responses", 0)
    for cls in DEFECT_CLASSES.values():
        n = affected.get(cls.code, 0)
        of = census.units.get(cls.unit, 0)
        census.classes.append(
            ClassCount(
                code=cls.code,
                title=cls.title,
                unit=cls.unit,
                affected=n,
                of=of,
                percent=round(100.0 * n / of, 2) if of else 0.0,
            )
        )
    return census


def render_census(census: Census, out: TextIO) -> None:
    read = census.sound + census.defective
    out.write(
        f"census: {census.inputs} inputs: {read} read ({census.sound} sound, {census.defective} defective), "
        f"{census.unreadable} unreadable, {census.skipped} skipped\n"
    )
    units = ", ".join(f"{n} {unit}" for unit, n in census.units.items() if n)
    if units:
        out.write(f"  units: {units}\n")
    if census.sdk_breaks:
        out.write(f"  the openai SDK streaming helper raises on {census.sdk_breaks} of {read}\n")
    found = [c for c in census.classes if c.affected]
    if not found:
        if read:
            out.write("  no defects found\n")
        return
    for c in found:
        out.write(f"  {c.title} in {c.affected} of {c.of} {c.unit} ({c.percent:.1f}%)  [{c.code}]\n")
    if census.reasoning_chars_lost:
        share = 100.0 * census.reasoning_chars_lost / max(census.reasoning_chars, 1)
        out.write(
            f"  reasoning text lost: {census.reasoning_chars_lost} of {census.reasoning_chars} chars "
            f"({share:.2f}%)\n"
        )
