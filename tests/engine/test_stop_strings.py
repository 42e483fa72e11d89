"""Stop strings over streamed text: the same result however the text is split."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from accord.engine.local._sequence import StopMatcher
from accord.engine.scripted import stop_cut


def feed_all(stops: tuple[str, ...], pieces: list[str]) -> tuple[str, str | None]:
    matcher = StopMatcher(stops)
    out = []
    for piece in pieces:
        out.append(matcher.feed(piece))
        if matcher.stopped:
            return "".join(out), matcher.matched
    out.append(matcher.flush())
    assert matcher.matched is None
    return "".join(out), None


def whole(stops: tuple[str, ...], text: str) -> tuple[str, str | None]:
    """Character by character: stop where a stop string is first completed, cutting the longest;
    the stop string that was cut is the one reported."""
    for end in range(1, len(text) + 1):
        done = [s for s in stops if s and text[:end].endswith(s)]
        if done:
            longest = max(done, key=len)
            return text[: end - len(longest)], longest
    return text, None


@given(
    text=st.text(alphabet="abc\n", max_size=40),
    stops=st.lists(st.text(alphabet="abc\n", min_size=1, max_size=4), max_size=3),
    cuts=st.lists(st.integers(0, 40), max_size=10),
)
def test_streamed_stop_matching_equals_matching_the_whole_text(
    text: str, stops: list[str], cuts: list[int]
) -> None:
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    assert feed_all(tuple(stops), pieces) == whole(tuple(stops), text)
    # The scripted engine cuts its chunks at the same place and reports the same string.
    kept, matched = stop_cut(pieces, tuple(stops))
    assert ("".join(kept), matched) == whole(tuple(stops), text)


def test_the_first_completed_stop_string_wins_even_if_a_longer_one_started_earlier() -> None:
    matcher = StopMatcher(("a", "\naa"))
    assert matcher.feed("\naa") == "\n"


def test_text_that_might_start_a_stop_string_is_held_back() -> None:
    matcher = StopMatcher(("</end>",))
    assert matcher.feed("hello </e") == "hello "
    assert matcher.feed("xtra") == "</extra"
    assert matcher.feed("</en") == ""
    assert matcher.feed("d> more") == ""
    assert matcher.stopped
