"""JsonPrefix against a real partial JSON parser: what it lets through, anthropic's client parses.

Why: the Messages projection streams a call's arguments only while JsonPrefix says they are
the start of a JSON object; anything it accepts that jiter (the parser inside anthropic's
stream accumulator) rejects would make the client raise mid-stream. And it must not hold
back valid arguments, or tool input would stop streaming.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from jiter import from_json

from accord.events._jsonprefix import JsonPrefix

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
objects = st.dictionaries(st.text(max_size=5), json_values, max_size=4)
alphabet = st.sampled_from(list('{}[]":, \n\t-+.0123456789eEtruefalsnl\\/bu"aA\x01'))


@settings(max_examples=300, deadline=None)
@given(value=objects, indent=st.sampled_from([None, 1]), ascii_only=st.booleans())
def test_every_prefix_of_a_json_object_is_accepted(
    value: object, indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    scanner = JsonPrefix()
    for ch in text:
        assert scanner.feed(ch), text
    assert json.loads(text) == value


@st.composite
def near_json(draw: st.DrawFn) -> str:
    """The start of a real JSON object, then anything."""
    valid = json.dumps(draw(objects), indent=draw(st.sampled_from([None, 1])))
    head = valid[: draw(st.integers(0, len(valid)))]
    return head + "".join(draw(st.lists(alphabet, max_size=8)))


@settings(max_examples=1000, deadline=None)
@given(text=near_json() | st.lists(alphabet, max_size=30).map("".join), splits=st.integers(1, 4))
def test_whatever_it_accepts_the_client_parser_accepts(text: str, splits: int) -> None:
    scanner = JsonPrefix()
    step = max(1, len(text) // splits)
    for i in range(0, len(text), step):
        if not scanner.feed(text[i : i + step]):
            return
        prefix = text[: i + step]
        if prefix.strip():
            from_json(prefix.encode(), partial_mode=True)


def test_surrogate_escapes_come_in_pairs() -> None:
    """jiter refuses a lone surrogate escape, so JsonPrefix does too."""
    assert JsonPrefix().feed('{"a": "\\ud83d\\ude00"}')
    for bad in ['{"a": "\\ud83d"', '{"a": "\\ud83dx', '{"a": "\\udc00', '{"a": "\\ud83d\\u0041']:
        assert not JsonPrefix().feed(bad), bad


def test_known_breaks() -> None:
    for bad in [
        '{"a": "x\ny"',
        '{"a": 01',
        '{"a" 1',
        "[1]",
        '{"a": 1,}',
        '{"a": [1,]',
        '{"a": tru!',
        '{"a": "\\x"',
        "{} x",
    ]:
        scanner = JsonPrefix()
        assert not scanner.feed(bad), bad
        assert scanner.broken
