"""Streaming = whole for every parser table in the corpus (SPEC P3, docs/model-formats.md B13/B14).

Each table row is parsed whole, one character at a time, at every 2-way split and at every
(or an even sample of) 3-way split, and at Hypothesis-chosen splits; the merged segments
must be identical every time and equal to the row's expectation. The tables live in
``accord/replay/corpus`` so that ``accord fuzz parsers`` replays the very same rows.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.replay.parser_fuzz import (
    CorpusFile,
    check_row,
    cut,
    exhaustive_chunkings,
    load_corpus,
    parse_chunks,
)

CORPUS = load_corpus()
BY_ID = {f"{f.stage}/{f.parser}": f for f in CORPUS}

#: The tables this suite is responsible for; every one needs at least 25 rows (issue 3).
OWNED = [
    "reasoning/qwen3",
    "reasoning/deepseek_r1",
    "reasoning/deepseek_v3",
    "reasoning/glm45",
    "reasoning/glm47",
    "reasoning/mistral",
    "reasoning/kimi_k2",
    "tools/glm45",
    "tools/glm47",
    "tools/qwen3_coder",
    "tools/deepseek_v32",
    "reasoning/gemma4",
    "tools/gemma4",
    "reasoning/kimi_k3",
    "tools/kimi_k3",
]


@pytest.mark.parametrize("table", OWNED)
def test_table_has_enough_rows_with_expectations(table: str) -> None:
    """A family is only covered when its table exists, is big enough and says what it expects."""
    corpus = BY_ID[table]
    assert len(corpus.rows) >= 25
    assert all(row.expect is not None for row in corpus.rows)
    assert len({row.name for row in corpus.rows}) == len(corpus.rows)


@pytest.mark.parametrize("table", sorted(BY_ID))
def test_every_row_parses_the_same_however_it_is_chunked(table: str) -> None:
    """Whole, per character, every 2-way and (sampled) 3-way split: one result, the expected one."""
    failures = [
        f"{row.name}: {why}"
        for row in BY_ID[table].rows
        if (why := check_row(row, exhaustive_chunkings(row.output, max_three_way=600))) is not None
    ]
    assert failures == []


def _rows_and_cuts(corpus: CorpusFile) -> st.SearchStrategy[tuple[int, list[int]]]:
    def cuts_for(index: int) -> st.SearchStrategy[tuple[int, list[int]]]:
        n = len(corpus.rows[index].output)
        if n < 2:
            return st.just((index, []))
        positions = st.lists(st.integers(1, n - 1), unique=True, max_size=12).map(sorted)
        return positions.map(lambda cuts: (index, cuts))

    return st.integers(0, len(corpus.rows) - 1).flatmap(cuts_for)


@pytest.mark.parametrize("table", sorted(BY_ID))
def test_hypothesis_chosen_splits_match_the_table(table: str) -> None:
    """Random cut points (shrunk to the fewest on failure) never change the parse."""
    corpus = BY_ID[table]

    @settings(
        max_examples=150,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(_rows_and_cuts(corpus))
    def check(case: tuple[int, list[int]]) -> None:
        index, cuts = case
        row = corpus.rows[index]
        expected = list(row.expect) if row.expect is not None else parse_chunks(row, [row.output])
        assert parse_chunks(row, cut(row.output, cuts)) == expected, row.name

    check()
