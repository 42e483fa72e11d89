"""``accord audit --html``: census per server, defect classes with examples, defective streams with
the divergence marked and an SVG timeline; rendered in headless Chromium (marked slow)."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accord.replay.report import Slot, report_path
from accord.replay.report_svg import LANES, lane, timeline_svg

STREAMS = Path(__file__).parent / "streams"
LAYOUT = {
    "vllm": ["clean_text.sse", "text_mismatch.sse", "reasoning_tail_lost.sse"],
    "sglang": ["clean_reasoning_message.sse", "sequence_gap.sse", "missing_terminal.sse"],
}


class _Census(HTMLParser):
    """Counts what the checks need: census rows, class rows, timelines and their event marks."""

    def __init__(self) -> None:
        super().__init__()
        self.table: str | None = None
        self.rows: dict[str, int] = {"census": 0, "classes": 0}
        self.svgs = 0
        self.events = 0
        self.diverge = 0
        self.first_cells: list[str] = []
        self._cell = False
        self._in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.table = a.get("id")
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body and self.table in self.rows:
            self.rows[self.table] += 1
            self._cell = self.table == "census"
        elif tag == "svg" and a.get("class") == "timeline":
            self.svgs += 1
        elif tag == "rect" and a.get("class") == "event":
            self.events += 1
        elif tag == "span" and a.get("class") == "diverge":
            self.diverge += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self._in_body = False

    def handle_data(self, data: str) -> None:
        if self._cell and data.strip():
            self.first_cells.append(data.strip())
            self._cell = False


def _audit_dir(tmp: Path) -> Path:
    root = tmp / "captures"
    for server, names in LAYOUT.items():
        (root / server).mkdir(parents=True)
        for name in names:
            shutil.copy(STREAMS / name, root / server / name)
    return root


def _report(tmp: Path) -> tuple[Path, int]:
    out = tmp / "report.html"
    status = report_path(_audit_dir(tmp), out, io.StringIO())
    return out, status


def _parse(html: str) -> _Census:
    parser = _Census()
    parser.feed(html)
    return parser


def test_report_content(tmp_path: Path) -> None:
    out, status = _report(tmp_path)
    assert status == 1  # defects found, as the plain audit says
    html = out.read_text()
    # Self-contained: nothing is fetched and nothing runs.
    assert not any(word in html for word in ("<script", "<link", " src=", " href=", "url("))
    page = _parse(html)
    assert page.first_cells == ["sglang", "vllm", "all"]
    assert page.rows["classes"] == 4  # text_mismatch, reasoning_tail_lost, sequence_gap, missing_terminal
    assert page.svgs == 4  # one timeline per defective stream
    assert page.events > 40
    assert page.diverge >= 2  # text_mismatch and reasoning_tail_lost, both views marked
    assert "first divergence at character" in html
    # The sequence gap's event is drawn red on its timeline.
    assert 'fill="#d62728"><title>6: response.reasoning_text.delta' in html


@given(a=st.text(max_size=30), b=st.text(max_size=30))
def test_divergence_is_the_first_differing_character(a: str, b: str) -> None:
    d = Slot("x", a, b).divergence
    if a == b:
        assert d is None
        return
    assert d is not None and a[:d] == b[:d]
    assert d == len(a) or d == len(b) or a[d] != b[d]


@given(kinds=st.lists(st.sampled_from(["response.created", "response.output_text.delta", "x", "error"])))
def test_timeline_has_one_mark_per_event(kinds: list[str]) -> None:
    svg = timeline_svg(kinds)
    assert svg.count('class="event"') == len(kinds)
    assert all(lane(k) in LANES for k in kinds)


def _png_size_and_colours(png: bytes) -> tuple[int, int, int]:
    """Width, height and the number of distinct byte values in the decoded pixel rows."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    data, at = b"", 8
    while at < len(png):
        length = struct.unpack(">I", png[at : at + 4])[0]
        kind = png[at + 4 : at + 8]
        if kind == b"IDAT":
            data += png[at + 8 : at + 8 + length]
        at += 12 + length
    return width, height, len(set(zlib.decompress(data)))


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_renders_in_chromium(tmp_path: Path) -> None:
    assert CHROMIUM is not None
    out, _ = _report(tmp_path)
    profile = tmp_path / "chromium-profile"
    common = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}"]
    dom = subprocess.run(
        [*common, "--dump-dom", out.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    page = _parse(dom)
    assert page.first_cells == ["sglang", "vllm", "all"]
    assert page.svgs == 4 and page.events > 40
    shot = tmp_path / "report.png"
    subprocess.run(
        [*common, "--window-size=1000,1800", f"--screenshot={shot}", out.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    width, height, colours = _png_size_and_colours(shot.read_bytes())
    assert (width, height) == (1000, 1800)
    assert colours > 50  # tables, text and coloured marks, not a blank page
    print(f"screenshot kept at {shot}")
