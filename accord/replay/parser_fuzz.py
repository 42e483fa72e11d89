"""Chunk-split fuzzing of the parsers over a corpus of outputs (SPEC R4, P3).

Property: a parser gives the same merged segments whether its input arrives whole, one
character at a time, or cut anywhere; where a corpus row states what it expects, the whole
parse equals that too. Hypothesis chooses the cuts and shrinks a failure to the fewest,
smallest cuts, so what gets printed is the minimal chunking that breaks the parser.

Corpus format
-------------
One JSON file per parser, named ``<stage>/<parser>.json``: ``reasoning/glm45.json`` and
``tools/glm45.json`` are the two GLM-4.5 tables (several families have a parser of each
stage under one name). The packaged ones live in ``accord/replay/corpus/``::

    {
      "stage": "reasoning" | "tools",
      "parser": "<name registered in accord.pipeline.reasoning or accord.pipeline.tools>",
      "rows": [
        {
          "name": "unique, says what the row proves",
          "output": "the text fed to the parser",
          "thinking": true | false | null,   # reasoning stage: the request's thinking switch
                                             # (optional, default null = the model default)
          "tools": [ToolSpec, ...],          # tools stage: the tools offered (optional, default [])
          "expect": [Segment, ...] | null    # optional: null/absent checks streaming == whole only
        }
      ],
      "bench": {                             # optional: a realistic output for the benchmark
        "thinking": true | false | null,
        "tools": [ToolSpec, ...],
        "parts": ["once", {"repeat": "unit"}, ...]
      }
    }

- A tools-stage row's ``output`` goes straight into the tool parser: it is the content text
  a reasoning splitter would have passed on.
- ``ToolSpec`` is :class:`accord.pipeline.segments.ToolSpec` as JSON: ``{"name": ...,
  "parameters": {...}}`` plus the optional ``kind``, ``namespace``, ``description``, ``strict``.
- ``Segment`` is a parsed segment as msgspec encodes it: ``{"kind": "reasoning", "text": ...}``,
  ``{"kind": "content", "text": ..., "phase": null}`` (``phase`` optional), ``{"kind":
  "tool_call", "name": ..., "arguments": "<JSON object text>", "call_id": null}`` (``call_id``
  optional). ``expect`` lists the segments after :func:`merge_segments`: adjacent text of
  one kind joined, empty text dropped. Arguments are compared as text, exactly.
- ``bench.parts``: a string part appears once; a ``{"repeat": unit}`` part repeats its unit
  so that the repeated parts share the requested size equally. Without ``bench`` the
  benchmark repeats the rows' outputs.

A directory given instead of the packaged corpus may hold such ``*.json`` files (at any
depth; the ``stage`` and ``parser`` inside a file are what count) and raw outputs ``*.txt``. A raw output has no expectation: it is run through the chosen parser (or
every registered one) with thinking ``null`` and the tools listed in ``tools.json`` in the same
directory (a JSON list of ToolSpec; none when absent), and only streaming == whole is checked.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import Literal, TextIO

import msgspec

from accord.pipeline import reasoning, tools
from accord.pipeline.segments import MergedSegment, ParsedSegment, ToolSpec, merge_segments
from accord.replay.progress import bar

Stage = Literal["reasoning", "tools"]


class _Row(msgspec.Struct, kw_only=True):
    name: str
    output: str
    thinking: bool | None = None
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    expect: list[MergedSegment] | None = None


class _Bench(msgspec.Struct, kw_only=True):
    thinking: bool | None = None
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    parts: list[str | dict[str, str]] = msgspec.field(default_factory=list)


class _File(msgspec.Struct, kw_only=True):
    stage: Stage
    parser: str
    rows: list[_Row]
    bench: _Bench | None = None


@dataclass(frozen=True)
class CorpusRow:
    """One output to parse, with what the parser was given and (optionally) what it must say."""

    stage: Stage
    parser: str
    name: str
    output: str
    thinking: bool | None = None
    tools: tuple[ToolSpec, ...] = ()
    expect: tuple[MergedSegment, ...] | None = None


@dataclass(frozen=True)
class CorpusFile:
    stage: Stage
    parser: str
    rows: tuple[CorpusRow, ...]
    bench: _Bench | None = field(default=None)

    def bench_output(self, size: int) -> tuple[str, bool | None, tuple[ToolSpec, ...]]:
        """A realistic output of about ``size`` characters, with its thinking switch and tools."""
        if self.bench is None or not self.bench.parts:
            unit = "".join(r.output for r in self.rows)
            seen: dict[str, ToolSpec] = {}
            for r in self.rows:
                for t in r.tools:
                    seen.setdefault(t.name, t)
            thinking = self.rows[0].thinking if self.rows else None
            return unit * max(1, size // max(1, len(unit))), thinking, tuple(seen.values())
        repeats = [p for p in self.bench.parts if isinstance(p, dict)]
        share = size // max(1, len(repeats))
        text: list[str] = []
        for part in self.bench.parts:
            if isinstance(part, str):
                text.append(part)
            else:
                unit = part["repeat"]
                text.append(unit * max(1, share // max(1, len(unit))))
        return "".join(text), self.bench.thinking, tuple(self.bench.tools)


def _packaged_dir() -> Path:
    return Path(str(resources.files("accord.replay") / "corpus"))


def load_corpus_file(path: Path) -> CorpusFile:
    raw = msgspec.json.decode(path.read_bytes(), type=_File)
    rows = tuple(
        CorpusRow(
            stage=raw.stage,
            parser=raw.parser,
            name=r.name,
            output=r.output,
            thinking=r.thinking,
            tools=tuple(r.tools),
            expect=None if r.expect is None else tuple(r.expect),
        )
        for r in raw.rows
    )
    return CorpusFile(stage=raw.stage, parser=raw.parser, rows=rows, bench=raw.bench)


def load_corpus(corpus_dir: Path | None = None) -> list[CorpusFile]:
    """Every corpus file in ``corpus_dir`` (default: the packaged corpus), sorted by name.

    Raw ``*.txt`` outputs are not included here; :func:`raw_rows` turns them into rows.
    """
    directory = corpus_dir if corpus_dir is not None else _packaged_dir()
    return [load_corpus_file(p) for p in sorted(directory.rglob("*.json")) if p.name != "tools.json"]


def registered(stage: Stage) -> list[str]:
    names = reasoning.reasoning_parser_names() if stage == "reasoning" else tools.tool_parser_names()
    return [n for n in names if n != "none"]


def raw_rows(corpus_dir: Path, parser: str | None) -> list[CorpusRow]:
    """Rows for the raw ``*.txt`` outputs of ``corpus_dir``, one per output and parser."""
    outputs = sorted(corpus_dir.glob("*.txt"))
    if not outputs:
        return []
    tools_file = corpus_dir / "tools.json"
    offered: tuple[ToolSpec, ...] = ()
    if tools_file.exists():
        offered = tuple(msgspec.json.decode(tools_file.read_bytes(), type=list[ToolSpec]))
    rows: list[CorpusRow] = []
    for stage in ("reasoning", "tools"):
        names = registered(stage)
        chosen = names if parser is None else [n for n in names if n == parser]
        for name in chosen:
            for path in outputs:
                text = path.read_text(encoding="utf-8")
                rows.append(
                    CorpusRow(stage, name, path.name, text, None, offered if stage == "tools" else ())
                )
    return rows


def make_parser(row: CorpusRow) -> reasoning.ReasoningSplitter | tools.ToolCallParser:
    """A fresh parser of the row's stage, given the row's thinking switch or tools."""
    if row.stage == "reasoning":
        return reasoning.reasoning_parser(row.parser)(row.thinking)
    return tools.tool_parser(row.parser)(row.tools)


def parse_chunks(row: CorpusRow, chunks: Sequence[str]) -> list[MergedSegment]:
    """Feed ``chunks`` to a fresh parser for ``row`` and return the merged segments."""
    parser = make_parser(row)
    out: list[ParsedSegment] = []
    for chunk in chunks:
        out.extend(parser.feed(chunk))
    out.extend(parser.finish())
    return merge_segments(out)


def cut(text: str, cuts: Sequence[int]) -> list[str]:
    """``text`` split at the sorted positions ``cuts``."""
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in pairwise(bounds)]


def exhaustive_chunkings(text: str, max_three_way: int = 1500) -> Iterator[list[str]]:
    """One character at a time, every 2-way split, and every (or an even sample of) 3-way split."""
    n = len(text)
    yield list(text)
    for i in range(1, n):
        yield [text[:i], text[i:]]
    pairs = n * (n - 1) // 2
    if pairs <= max_three_way:
        for i in range(1, n):
            for j in range(i + 1, n):
                yield [text[:i], text[i:j], text[j:]]
        return
    # Too many to try all: a seeded sample, plus every split that puts the second cut
    # right after the first, which is where a one-character chunk lands inside a marker.
    rng = random.Random(n)
    for i in range(1, n - 1):
        yield [text[:i], text[i : i + 1], text[i + 1 :]]
    for _ in range(max(0, max_three_way - n)):
        i, j = sorted(rng.sample(range(1, n), 2))
        yield [text[:i], text[i:j], text[j:]]


def _describe(segments: Sequence[MergedSegment]) -> str:
    return msgspec.json.encode(list(segments)).decode()


def check_row(row: CorpusRow, chunkings: Iterator[list[str]] | None = None) -> str | None:
    """``None`` when the row holds for the whole text and every given chunking, else why not."""
    whole = parse_chunks(row, [row.output])
    if row.expect is not None and whole != list(row.expect):
        return f"whole parse {_describe(whole)} != expected {_describe(row.expect)}"
    for chunks in chunkings if chunkings is not None else exhaustive_chunkings(row.output):
        got = parse_chunks(row, chunks)
        if got != whole:
            return f"chunks {chunks!r} gave {_describe(got)}, whole gave {_describe(whole)}"
    return None


def minimal_failing_chunking(row: CorpusRow, seed: int, examples: int) -> list[str] | None:
    """The smallest chunking Hypothesis finds whose parse differs from the whole parse."""
    from hypothesis import HealthCheck, Verbosity, find, settings
    from hypothesis import strategies as st
    from hypothesis.errors import NoSuchExample

    n = len(row.output)
    if n < 2:
        return None
    whole = parse_chunks(row, [row.output])
    strategy = st.lists(st.integers(1, n - 1), unique=True, max_size=min(n - 1, 64)).map(sorted)

    def differs(cuts: list[int]) -> bool:
        return parse_chunks(row, cut(row.output, cuts)) != whole

    try:
        found: list[int] = find(
            strategy,
            differs,
            settings=settings(
                max_examples=examples,
                database=None,
                deadline=None,
                verbosity=Verbosity.quiet,
                suppress_health_check=list(HealthCheck),
            ),
            random=random.Random(seed),
        )
    except NoSuchExample:
        return None
    return cut(row.output, found)


def run_parser_fuzz(
    parser: str | None, seed: int, examples: int, corpus_dir: Path | None, out: TextIO
) -> int:
    """Fuzz the chunking property for ``parser`` (or all); print failures; 0 if all hold, else 1."""
    rows: list[CorpusRow] = []
    for corpus in load_corpus(corpus_dir):
        if parser is None or corpus.parser == parser:
            rows.extend(corpus.rows)
    if corpus_dir is not None:
        rows.extend(raw_rows(corpus_dir, parser))
    if not rows:
        print(f"no corpus rows for parser {parser!r}", file=out)
        return 1
    failures = 0
    for row in bar(rows, "fuzz parsers"):
        label = f"{row.stage}/{row.parser}/{row.name}"
        whole = parse_chunks(row, [row.output])
        if row.expect is not None and whole != list(row.expect):
            failures += 1
            print(f"FAIL {label}: whole parse {_describe(whole)}", file=out)
            print(f"     expected            {_describe(row.expect)}", file=out)
            continue
        chunks = minimal_failing_chunking(row, seed, examples)
        if chunks is None:
            continue
        failures += 1
        got = parse_chunks(row, chunks)
        print(f"FAIL {label}: minimal failing chunking {chunks!r}", file=out)
        print(f"     streamed {_describe(got)}", file=out)
        print(f"     whole    {_describe(whole)}", file=out)
    print(f"{len(rows) - failures}/{len(rows)} rows hold (seed {seed}, {examples} examples each)", file=out)
    return 1 if failures else 0


__all__ = [
    "CorpusFile",
    "CorpusRow",
    "check_row",
    "cut",
    "exhaustive_chunkings",
    "load_corpus",
    "load_corpus_file",
    "make_parser",
    "minimal_failing_chunking",
    "parse_chunks",
    "raw_rows",
    "run_parser_fuzz",
]
