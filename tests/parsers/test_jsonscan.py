"""``JsonScanner`` against a one-character-at-a-time reference, over every way of splitting the text.

The scanner jumps between the characters that matter (and skips whole chunks of a string
argument), so its depth, "in a string" and "after a backslash" states are checked here against
the plainest possible reading of the same text.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from accord.pipeline.tools._jsonscan import AFTER_BACKSLASH, IN_STRING, INVALID, MORE, OUTSIDE, JsonScanner

_OUTSIDE_OK = set(" \t\r\n,:0123456789+-.eEtrufalsn")


def _reference(text: str) -> int:
    """Index just past the bracket that closes the first one, INVALID, or MORE."""
    return _read(text)[0]


def _state_after(text: str) -> int:
    """Where ``text`` (which has not ended) leaves the reader: outside, in a string, after a backslash."""
    _, in_string, escape = _read(text)
    return AFTER_BACKSLASH if escape else IN_STRING if in_string else OUTSIDE


def _read(text: str) -> tuple[int, bool, bool]:
    depth, in_string, escape = 0, False, False
    for i, c in enumerate(text):
        if in_string:
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1, False, False
        elif c not in _OUTSIDE_OK:
            return INVALID, False, False
    return MORE, in_string, escape


def _scan(chunks: list[str]) -> tuple[int, int]:
    """(result, offset of the chunk that gave it) of feeding ``chunks`` in order."""
    scanner = JsonScanner()
    offset = 0
    for chunk in chunks:
        result = scanner.feed(chunk)
        if result != MORE:
            return result, offset
        offset += len(chunk)
        assert scanner.state == _state_after("".join(chunks)[:offset])
    return MORE, offset


# Mostly string content with backslashes and quotes, which is where the shortcuts are.
_body = st.text(alphabet='ab \\\\\\"{}[]:,1x<', max_size=60)


@st.composite
def _split(draw: st.DrawFn) -> tuple[str, list[str]]:
    text = "{" + draw(_body)
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=12)))
    bounds = [0, *[c for c in cuts if c < len(text)], len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@settings(max_examples=600, deadline=None)
@given(_split())
def test_any_split_finds_what_the_reference_finds(case: tuple[str, list[str]]) -> None:
    text, chunks = case
    expected = _reference(text)
    result, offset = _scan(chunks)
    if expected == MORE:
        assert result == MORE
    elif expected == INVALID:
        assert result == INVALID
    else:
        assert result >= 0
        assert offset + result == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="xy{", max_size=8), _split())
def test_start_skips_what_was_fed_before(prefix: str, case: tuple[str, list[str]]) -> None:
    text, _ = case
    alone = JsonScanner().feed(text)
    within = JsonScanner().feed(prefix + text, len(prefix))
    assert within == (alone if alone < 0 else alone + len(prefix))


def test_escape_state_crosses_chunks() -> None:
    # A string chunk that ends in one backslash escapes the next chunk's first character.
    assert _scan(['{"a', "\\", '"', '"}']) == (2, 5)
    assert _scan(['{"a\\\\', '"}']) == (2, 5)
    assert _scan(['{"a\\\\\\', '"', '"}']) == (2, 7)
    # A chunk of backslashes after one that ended in an escape: its first is the escaped one.
    assert _scan(['{"a\\', "\\", '"}']) == (2, 5)
    assert _scan(['{"a\\', "\\\\", '"', '"}']) == (2, 7)
