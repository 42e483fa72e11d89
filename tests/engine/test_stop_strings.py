"""Stop strings over streamed text: the same result however the text is split."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accord.engine.local import LocalEngine
from accord.engine.local._outbox import Outbox
from accord.engine.local._sequence import Phase, Sequence, StopMatcher
from accord.engine.local._tokenizer import Tokenizer
from accord.engine.protocol import split_stops
from accord.engine.scripted import stop_cut
from accord.events.generation import Chunk, Finished
from accord.kernels.noise import SamplingRow


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


def test_a_stop_that_is_a_special_token_is_split_off_by_its_id() -> None:
    specials = {"<|call|>": 7, "<|return|>": 9}
    text, tokens = split_stops(("<|call|>", "END", "", "<|return|>"), specials.get)
    assert text == ("END", "")
    assert tokens == {7: "<|call|>", 9: "<|return|>"}


@pytest.fixture
def smollm2_tokenizer(engine: LocalEngine) -> Tokenizer:
    """SmolLM2's own vocabulary (the session's engine, loaded once for the engine tests)."""
    return engine.tokenizer


def _sequence(tokenizer: Tokenizer, stops: tuple[str, ...], *, by_id: bool = True) -> Sequence:
    text_stops, token_stops = split_stops(stops, tokenizer.special_id) if by_id else (stops, {})
    return Sequence(
        request_id="",
        prompt_len=1,
        tokens=[0],
        max_new=64,
        sampling=SamplingRow(temperature=0.0),
        stop_ids=tokenizer.stop_ids,
        detokenizer=tokenizer.detokenizer(),
        stops=StopMatcher(text_stops),
        stop_tokens=token_stops,
        outbox=Outbox(),
    )


def _play(seq: Sequence, ids: list[int]) -> tuple[str, Finished | None]:
    out = []
    for token in ids:
        out.extend(seq.accept(token))
        if seq.phase is Phase.DONE:
            break
    finished = [e for e in out if isinstance(e, Finished)]
    text = "".join(e.text for e in out if isinstance(e, Chunk))
    return text, finished[0] if finished else None


def test_a_special_token_stop_ends_on_the_id_and_its_text_quoted_in_a_value_is_data(
    smollm2_tokenizer: Tokenizer,
) -> None:
    """The model writes the special token's id to mean it; the same text written as ordinary tokens
    (a call's arguments quoting the format) goes on as text, where a text stop would have cut it."""
    tok = smollm2_tokenizer
    marker = "<|im_start|>"
    special = tok.special_id(marker)
    assert special is not None and tok.encode(marker) == [special]
    # The same characters spelled by ordinary tokens: encoded in two parts, never one token.
    quoted = tok.encode('{"note": "<|im') + tok.encode('_start|> is data"}')
    assert special not in quoted and tok.decode(quoted) == '{"note": "<|im_start|> is data"}'
    after = tok.encode(" more")

    text, finished = _play(_sequence(tok, (marker,)), [*quoted, special, *after])
    assert text == '{"note": "<|im_start|> is data"}'
    assert finished is not None and finished.reason == "stop" and finished.stop_sequence == marker

    # Matched as text instead (as before), the quoted marker cut the value short.
    text, finished = _play(_sequence(tok, (marker,), by_id=False), [*quoted, special, *after])
    assert text == '{"note": "'
    assert finished is not None and finished.stop_sequence == marker
