"""``accord audit PATH --html REPORT.html``: the audit as one self-contained HTML page.

The page holds, with no script and nothing fetched: the census per server (the first
directory level under the audited directory; its top level is ``.``) and overall; per
defect class, the streams and units affected and one example; and for each defective
stream (the first ``MAX_STREAMS``), its defects, each text slot whose streamed text and
final snapshot differ side by side with the first divergence marked, and a timeline of its
events (:mod:`accord.replay.report_svg`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import TextIO

from accord.replay._check import StreamChecker
from accord.replay._items import PartKey, item_texts
from accord.replay.audit import audit_file, exit_status, iter_inputs
from accord.replay.census import Census, take_census
from accord.replay.defects import DEFECT_CLASSES
from accord.replay.progress import bar
from accord.replay.report_svg import timeline_svg
from accord.replay.verdict import Verdict

MAX_STREAMS = 25
#: Characters shown either side of a divergence.
CONTEXT = 240
_EVENT_NUMBER = re.compile(r"\bevent (\d+)\b")


class RecordingChecker(StreamChecker):
    """A checker that also keeps the type of every event it is fed, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: list[str] = []

    def _feed(self, obj: object, n: int) -> None:
        kind = obj.get("type") if isinstance(obj, dict) else None
        self.kinds.append(kind if isinstance(kind, str) else "(not an event)")
        super()._feed(obj, n)


@dataclass
class Slot:
    """One text slot of one item: what the deltas built and what the final response says."""

    label: str
    streamed: str
    final: str | None
    #: What ``final`` is: the final snapshot, or (when that agrees) the slot's done event.
    against: str = "final snapshot"

    @property
    def divergence(self) -> int | None:
        """Index of the first differing character; None when the two agree."""
        if self.final is None or self.streamed == self.final:
            return None
        n = 0
        for a, b in zip(self.streamed, self.final, strict=False):
            if a != b:
                break
            n += 1
        return n


@dataclass
class Stream:
    verdict: Verdict
    kinds: list[str]
    slots: list[Slot] = field(default_factory=list)


def _slots(checker: StreamChecker) -> list[Slot]:
    slots = []
    for item in sorted(checker.items.values(), key=lambda it: it.order):
        final = checker.finals.get(item.index)
        finals: dict[PartKey, str] = item_texts(final) if final is not None else {}
        for key, part in item.parts.items():
            kind, index = key
            label = f"output[{item.index}] {item.type} {kind}" + (f"[{index}]" if index is not None else "")
            streamed, final_text = "".join(part.pieces), finals.get(key)
            if (final_text is None or final_text == streamed) and part.done_text not in (None, streamed):
                slots.append(Slot(label, streamed, part.done_text, "done event"))
            else:
                slots.append(Slot(label, streamed, final_text))
    return slots


def audit_for_report(path: Path) -> tuple[list[Verdict], dict[str, Stream]]:
    """Audit ``path`` (a file or a directory) keeping what the page shows of each defective stream."""
    files = (
        [(p, str(p.relative_to(path))) for p in iter_inputs(path)] if path.is_dir() else [(path, path.name)]
    )
    verdicts: list[Verdict] = []
    streams: dict[str, Stream] = {}
    for file, source in bar(files, "audit"):
        made: list[RecordingChecker] = []

        def checker(made: list[RecordingChecker] = made) -> StreamChecker:
            made.append(RecordingChecker())
            return made[-1]

        verdict = audit_file(file, source, checker_type=checker)
        if (
            path.is_dir()
            and verdict.status == "unreadable"
            and verdict.reason == "no server-sent events found"
        ):
            verdict.status = "skipped"
        verdicts.append(verdict)
        if verdict.status == "defective" and made and len(streams) < MAX_STREAMS:
            streams[source] = Stream(verdict, made[-1].kinds, _slots(made[-1]))
    return verdicts, streams


def server_of(source: str) -> str:
    return source.split("/", 1)[0] if "/" in source else "."


# -- rendering -------------------------------------------------------------------------------

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; } h3 { font-size: 15px; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.bad td { background: #fff3f0; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
.pair pre { white-space: pre-wrap; word-break: break-all; background: #fafafa; border: 1px solid #ddd;
  padding: 6px; margin: 0; max-height: 320px; overflow: auto; font-size: 12px; }
mark { background: #ffd54f; } .diverge { background: #ffb3a7; }
.stream { border-top: 1px solid #ddd; padding-top: 8px; }
code { font-size: 12px; }
"""


def _census_row(name: str, c: Census, codes: list[str]) -> str:
    read = c.sound + c.defective
    cells = [
        f"<td>{escape(name)}</td>",
        *(f'<td class="n">{v}</td>' for v in (c.inputs, read, c.sound, c.defective, c.unreadable, c.skipped)),
        f'<td class="n">{c.sdk_breaks}</td>',
    ]
    counts = {k.code: k for k in c.classes}
    for code in codes:
        k = counts[code]
        cells.append(f'<td class="n">{k.affected}/{k.of}</td>' if k.affected else '<td class="n">-</td>')
    cls = ' class="bad"' if c.defective or c.unreadable else ""
    return f"<tr{cls}>{''.join(cells)}</tr>"


def _census_table(verdicts: list[Verdict], overall: Census) -> str:
    codes = [k.code for k in overall.classes if k.affected]
    groups: dict[str, list[Verdict]] = {}
    for v in verdicts:
        groups.setdefault(server_of(v.source), []).append(v)
    head = "".join(
        f"<th>{h}</th>"
        for h in ("server", "inputs", "read", "sound", "defective", "unreadable", "skipped", "SDK raises")
    )
    head += "".join(
        f'<th title="{escape(DEFECT_CLASSES[c].title)}"><code>{escape(c)}</code></th>' for c in codes
    )
    rows = [_census_row(name, take_census(vs), codes) for name, vs in sorted(groups.items())]
    if len(groups) > 1:
        rows.append(_census_row("all", overall, codes))
    return f'<table id="census"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _classes_table(verdicts: list[Verdict], overall: Census) -> str:
    found = [k for k in overall.classes if k.affected]
    if not found:
        return "<p>No defects found.</p>"
    rows = []
    for k in found:
        example = next((v, d) for v in verdicts for d in v.defects if d.code == k.code)
        verdict, defect = example
        streams = sum(any(d.code == k.code for d in v.defects) for v in verdicts)
        rows.append(
            f"<tr><td><code>{escape(k.code)}</code></td><td>{escape(k.title)}</td>"
            f'<td class="n">{streams}</td><td class="n">{k.affected} of {k.of} {escape(k.unit)} '
            f"({k.percent:.1f}%)</td><td>{escape(DEFECT_CLASSES[k.code].meaning)}</td>"
            f"<td><code>{escape(verdict.source)}</code>: {escape(defect.detail)}</td></tr>"
        )
    head = "".join(f"<th>{h}</th>" for h in ("class", "title", "streams", "units", "meaning", "example"))
    return f'<table id="classes"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _marked(text: str, at: int) -> str:
    """``text`` around ``at``, the divergence wrapped in a mark."""
    start = max(0, at - CONTEXT)
    before, after = text[start:at], text[at : at + CONTEXT]
    lead = "…" if start else ""
    tail = "…" if at + CONTEXT < len(text) else ""
    head, rest = (after[:1], after[1:]) if after else ("", "")
    marked = f'<span class="diverge">{escape(head)}</span>' if head else "<mark>⟂ ends here</mark>"
    return f"{lead}{escape(before)}{marked}{escape(rest)}{tail}"


def _slot_html(slot: Slot) -> str:
    at = slot.divergence
    assert at is not None and slot.final is not None
    return (
        f"<h4>{escape(slot.label)}: first divergence at character {at} "
        f"(streamed {len(slot.streamed)}, {escape(slot.against)} {len(slot.final)} characters)</h4>"
        f'<div class="pair"><div><b>streamed (deltas)</b><pre>{_marked(slot.streamed, at)}</pre></div>'
        f"<div><b>{escape(slot.against)}</b><pre>{_marked(slot.final, at)}</pre></div></div>"
    )


def _stream_html(number: int, stream: Stream) -> str:
    v = stream.verdict
    flagged = frozenset(int(m) for d in v.defects for m in _EVENT_NUMBER.findall(d.detail))
    defects = "".join(
        f"<li><code>{escape(d.code)}</code>"
        + (f" [output_index {d.output_index}]" if d.output_index is not None else "")
        + f": {escape(d.detail)}</li>"
        for d in v.defects
    )
    differing = [s for s in stream.slots if s.divergence is not None]
    texts = "".join(_slot_html(s) for s in differing) or "<p>Streamed text, done events and final agree.</p>"
    sdk = " The openai SDK streaming helper raises on it." if v.breaks_sdk else ""
    return (
        f'<div class="stream" id="stream-{number}"><h3><code>{escape(v.source)}</code></h3>'
        f"<p>{escape(v.terminal or 'no terminal event')}, {v.events} events, "
        f"{escape(v.response_id or 'no response id')}.{sdk}</p><ul>{defects}</ul>"
        f"{texts}<p>Timeline ({len(stream.kinds)} events; red: events a defect names):</p>"
        f"{timeline_svg(stream.kinds, flagged)}</div>"
    )


def render_report(title: str, verdicts: list[Verdict], streams: dict[str, Stream]) -> str:
    overall = take_census(verdicts)
    read = overall.sound + overall.defective
    body = [
        f"<h1>{escape(title)}</h1>",
        f"<p>{overall.inputs} inputs: {read} read ({overall.sound} sound, {overall.defective} defective), "
        f"{overall.unreadable} unreadable, {overall.skipped} skipped.</p>",
        "<h2>Census</h2>",
        _census_table(verdicts, overall),
        "<h2>Defect classes</h2>",
        _classes_table(verdicts, overall),
        "<h2>Defective streams</h2>",
    ]
    if streams:
        shown = f"the first {len(streams)} of {overall.defective}" if overall.defective > len(streams) else ""
        if shown:
            body.append(f"<p>Showing {shown}.</p>")
        body += [_stream_html(i, s) for i, s in enumerate(streams.values(), start=1)]
    else:
        body.append("<p>None.</p>")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        + "".join(body)
        + "</body></html>\n"
    )


def report_path(path: Path, html: Path, out: TextIO) -> int:
    """``accord audit PATH --html REPORT``: write the page, say where, return the audit's exit status."""
    if not path.exists():
        out.write(f"{path}: no such file or directory\n")
        return 2
    status = exit_status(write_report(path, html))
    out.write(f"wrote {html} (exit status {status})\n")
    return status


def write_report(path: Path, out: Path) -> list[Verdict]:
    """Audit ``path`` and write the page to ``out``; returns the verdicts (for the exit status)."""
    verdicts, streams = audit_for_report(path)
    if not verdicts:
        verdicts = [Verdict(source=str(path), status="unreadable", reason="an empty directory")]
    out.write_text(render_report(f"accord audit: {path.name or path}", verdicts, streams), encoding="utf-8")
    return verdicts
