"""Numbers under a schema grammar have bounded digits (``accord.engine.local._grammar``).

A one-byte-per-token vocabulary lets the matcher be driven string by string, with no model.
"""

from __future__ import annotations

import json

import pytest

from accord.engine.local._grammar import (
    EXPONENT_DIGITS,
    FRACTION_DIGITS,
    INTEGER_DIGITS,
    ConstraintError,
    bounded_numbers,
)

xgrammar = pytest.importorskip("xgrammar")

SCHEMA = {
    "type": "object",
    "properties": {
        "x": {"type": "number"},
        "n": {"type": "integer"},
        "m": {"type": "integer", "minimum": 0},
        "s": {"type": "string", "pattern": "^[1-9][0-9]*$"},
    },
    "required": ["x", "n", "m", "s"],
}


def accepts(schema: dict[str, object], text: str) -> bool:
    vocab = [bytes([b]) for b in range(256)]
    info = xgrammar.TokenizerInfo(vocab, xgrammar.VocabType.RAW, vocab_size=256, stop_token_ids=[0])
    compiler = xgrammar.GrammarCompiler(info, max_threads=1)
    ebnf = str(xgrammar.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, strict_mode=True))
    matcher = xgrammar.GrammarMatcher(compiler.compile_grammar(bounded_numbers(ebnf)))
    return bool(matcher.accept_string(text)) and matcher.is_completed()


def body(x: str = "1.5", n: str = "-3", m: str = "7", s: str = "12") -> str:
    return f'{{"x": {x}, "n": {n}, "m": {m}, "s": "{s}"}}'


def test_numbers_within_double_precision_are_accepted() -> None:
    longest = "-" + "9" * INTEGER_DIGITS + "." + "1" * FRACTION_DIGITS + "e+" + "3" * EXPONENT_DIGITS
    assert accepts(SCHEMA, body())
    assert accepts(SCHEMA, body(x=longest, n="9" * INTEGER_DIGITS, m="8" * INTEGER_DIGITS))


@pytest.mark.parametrize(
    "fields",
    [
        {"x": "1" * (INTEGER_DIGITS + 1)},
        {"x": "0." + "1" * (FRACTION_DIGITS + 1)},
        {"x": "1e" + "1" * (EXPONENT_DIGITS + 1)},
        {"n": "2" * (INTEGER_DIGITS + 1)},
        {"m": "3" * (INTEGER_DIGITS + 1)},
    ],
)
def test_a_number_past_the_bound_is_refused(fields: dict[str, str]) -> None:
    assert not accepts(SCHEMA, body(**fields))


def test_a_string_pattern_keeps_its_own_length() -> None:
    assert accepts(SCHEMA, body(s="1" * 60))


def test_a_number_rule_of_another_shape_fails_loudly() -> None:
    with pytest.raises(ConstraintError):
        bounded_numbers('root ::= basic_number_x\nbasic_number_3 ::= ("" | ("." [0-9]+))')
