"""The JSON-argument tool tables and the harmony table: packaged, complete, covering docs/model-formats.md B14.

Each row is checked whole, per character, at every 2-way and (sampled) 3-way split and at
Hypothesis-chosen splits by ``test_corpus_chunking``, which runs every table in the corpus;
this module makes sure these tables are there, big enough, and what
``tests/parsers/json_tool_tables.py`` says they are.
"""

from __future__ import annotations

import pytest

from accord.pipeline import reasoning, tools
from accord.replay.parser_fuzz import load_corpus
from tests.parsers.json_tool_tables import CORPUS, render, tables

BY_ID = {f"{f.stage}/{f.parser}": f for f in load_corpus()}
BUILT = tables()
OWNED = [rel.removesuffix(".json") for rel in BUILT]

#: Rows every tool table has, one per docs/model-formats.md B14 item (or SPEC rule) they prove.
COMMON = [
    "single_call",
    "text_then_call",
    "two_calls_one_block",  # B14 3: several calls in one chunk (whole parse)
    "zero_argument_call",  # B14 4
    "strings_that_look_like_numbers",  # B14 5
    "truncated_inside_arguments",  # B14 7
    "restarted_opener_parsed_from_restart",  # SPEC P7
    "prose_mentions_tool",  # SPEC P6
    "undeclared_tool_released",  # SPEC P6
    "invalid_json_released",  # SPEC P4
    "extra_qualifier_repaired",  # SPEC P6, flat/namespaced tools (B14 10)
    "missing_namespace_repaired",
    "custom_tool_multiline_input",  # SPEC P10
]


def test_packaged_tables_are_what_the_table_module_builds() -> None:
    """The JSON under accord/replay/corpus is generated; an edit by hand would drift from the rows."""
    for rel, table in BUILT.items():
        assert (CORPUS / rel).read_text(encoding="utf-8") == render(table), rel


@pytest.mark.parametrize("table", OWNED)
def test_table_has_enough_rows_with_expectations(table: str) -> None:
    """Issue 3 asks for at least 25 whole outputs per family, each with its expected segments."""
    corpus = BY_ID[table]
    assert len(corpus.rows) >= 25
    assert all(row.expect is not None for row in corpus.rows)
    assert len({row.name for row in corpus.rows}) == len(corpus.rows)


@pytest.mark.parametrize("table", [t for t in OWNED if t.startswith("tools/")])
def test_tool_table_covers_the_checklist(table: str) -> None:
    """Every family is held to the same checklist, not only to the cases its format makes easy."""
    names = {row.name for row in BY_ID[table].rows}
    assert [n for n in COMMON if n not in names] == []


@pytest.mark.parametrize("table", OWNED)
def test_table_parser_is_registered(table: str) -> None:
    """A table for a parser nobody can select would test nothing that serves requests."""
    stage, name = table.split("/")
    names = reasoning.reasoning_parser_names() if stage == "reasoning" else tools.tool_parser_names()
    assert name in names
