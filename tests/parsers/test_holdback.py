"""The marker searches every parser relies on agree with their plain definitions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from accord.pipeline.holdback import MarkerSet, find_first, partial_suffix_len

GLM = ("<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")
#: Markers that are prefixes of one another and share first characters, where ties are decided.
NESTED = ("<a", "<ab", "<abc>", "[T", "[TOOL]", "b")

marker_sets = st.sampled_from([GLM, NESTED, ("<think>", "</think>"), ("x",), ("</tool_call>",)])
# Texts made mostly of marker pieces, so markers, partial markers and near misses are common.
pieces = st.sampled_from(
    ["<", "/", "a", "b", "c", ">", "[", "T", "OOL]", "tool_call", "</tool_call>", "arg_", "value", " "]
)
texts = st.lists(pieces | st.text(max_size=3), max_size=30).map("".join)


def _brute_first(text: str, markers: tuple[str, ...], start: int) -> tuple[int, str]:
    for pos in range(start, len(text)):
        hits = [m for m in markers if text.startswith(m, pos)]
        if hits:
            return pos, max(hits, key=len)
    return -1, ""


@given(marker_sets, texts, st.integers(0, 40), st.none() | st.integers(0, 40))
def test_marker_set_find_is_the_earliest_and_longest_marker(
    markers: tuple[str, ...], text: str, start: int, end: int | None
) -> None:
    # Within text[start:end]: a marker that runs past ``end`` is not there.
    expected = _brute_first(text[:end], markers, start)
    assert MarkerSet(markers).find(text, start, end) == expected
    assert find_first(text, markers, start, end) == expected


@given(marker_sets, texts)
def test_walking_from_each_marker_finds_every_marker(markers: tuple[str, ...], text: str) -> None:
    # How the parsers use it: each search starts where the last marker ended.
    fast = MarkerSet(markers)
    i = 0
    while True:
        pos, marker = fast.find(text, i)
        assert (pos, marker) == _brute_first(text, markers, i)
        if pos < 0:
            break
        i = pos + len(marker)


@given(marker_sets, texts, st.integers(0, 40))
def test_partial_len_is_the_longest_held_suffix(markers: tuple[str, ...], text: str, start: int) -> None:
    tail = text[start:]
    expected = max(
        (
            k
            for k in range(1, len(tail) + 1)
            if any(m.startswith(tail[-k:]) and m != tail[-k:] for m in markers)
        ),
        default=0,
    )
    assert MarkerSet(markers).partial_len(text, start) == expected
    if start == 0:
        assert partial_suffix_len(text, markers) == expected


def test_empty_marker_set_finds_nothing() -> None:
    assert MarkerSet(()).find("<tool_call>") == (-1, "")


def test_a_marker_that_runs_past_the_end_is_not_found() -> None:
    for markers in (("</tool_call>",), GLM):
        assert MarkerSet(markers).find("ab</tool_call>", 0, 8) == (-1, "")
        assert MarkerSet(markers).find("ab</tool_call>", 0, 14) == (2, "</tool_call>")
        assert find_first("ab</tool_call>", markers, 0, 8) == (-1, "")
