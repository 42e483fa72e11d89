"""Constrained decoding: a grammar per request masks the tokens that cannot continue a valid output.

Built on xgrammar. Measured against llguidance on SmolLM2's 49k vocabulary, batch 8, one thread, five
JSON schemas: filling the eight masks took 0.29 ms a step with xgrammar and 0.66 ms with llguidance,
and tokenizer set-up plus compiling the schemas 0.16 s against 0.49 s (llguidance's own torch helper
for applying masks took over a second a step on CPU; both were measured with the one below).

Each request owns a matcher; its mask applies to its own logits row only, so a constrained request next
to free ones (or to others with other grammars) leaves their numbers untouched (batch invariance). A
compiled grammar is immutable and cached by its source, so the same schema compiles once.

The masks are bit sets, 32 tokens a word, in numpy arrays; they are unpacked with numpy, which was several
times faster than shifting in torch. Nothing here needs torch, but xgrammar imports it, so the first
constrained request loads it (about 210 MiB resident) into a server on the C path.

An output closes within its token budget. A grammar keeps every token valid but cannot make a small
model stop: sampled, SmolLM2 repeats an unbounded array's element or a string's phrase until the token
limit, and the JSON is cut open (measured: "Describe Paris." gave 300 tokens of ``"Lyon", "Lyon", ...``).
Near the end of the budget the matcher steers towards the shortest valid finish (``_closing``). A
request without a token limit has the rest of the context as its budget.

Numbers have bounded digits. xgrammar's JSON grammar lets a number run on for ever, and SmolLM2 at
temperature 1.0 once wrote a latitude of about 200 digits until the token budget cut it, leaving invalid
JSON. JSON Schema has no digit limit for numbers, so the bound is the grammar's: 17 significant digits
before the point, 17 after it and 3 in an exponent, which is what any IEEE double needs to round-trip
(RFC 8259 section 6: numbers beyond double precision are not interoperable). Ranged numbers (``minimum``
with ``maximum``) are already written by xgrammar with at most 6 decimals and are left as they are.
"""

from __future__ import annotations

import json
import re
import threading
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from accord.engine.local._closing import (
    LOOKAHEAD_LIMIT,
    MARGIN,
    MEASURE_EVERY,
    ClosingTokens,
    StringState,
    closing_reserve,
)
from accord.engine.local._tokenizer import Tokenizer
from accord.engine.protocol import OutputConstraint
from accord.errors import GenerationError

if TYPE_CHECKING:
    import torch

Bitmask = npt.NDArray[np.int32]
Allowed = npt.NDArray[np.bool_]

_COMPILE_CACHE = 64


#: Digits after a number's first one, after its point, and in its exponent (see the module docstring).
INTEGER_DIGITS, FRACTION_DIGITS, EXPONENT_DIGITS = 17, 17, 3
_UNBOUNDED_INTEGER = "[1-9] [0-9]*"
_RULES = {
    # xgrammar 0.2's rules for an unranged number: fraction and exponent share one digit rule.
    "basic_number_3": ("basic_number_digits{1, -1}", f"basic_number_digits{{1, {FRACTION_DIGITS}}}"),
    "basic_number_5": ("basic_number_digits{1, -1}", f"basic_number_digits{{1, {EXPONENT_DIGITS}}}"),
}


class ConstraintError(GenerationError):
    """The request's schema or tool format cannot be compiled."""


def _tool_call_schema(constraint: OutputConstraint) -> dict[str, Any]:
    options = [
        {
            "type": "object",
            "properties": {"name": {"const": t.name}, "arguments": json.loads(t.parameters or "{}") or {}},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for t in constraint.tools
    ]
    return options[0] if len(options) == 1 else {"anyOf": options}


def bounded_numbers(ebnf: str) -> str:
    """xgrammar's EBNF for a schema with every JSON number's digits bounded (module docstring).

    Rewrites the integer part wherever it is unbounded (plain numbers and integers, and integers with
    only a ``minimum``: xgrammar writes all three as ``[1-9] [0-9]*``), and the fraction and exponent
    of plain numbers. Raises ConstraintError where a number rule is not of the shape this expects, so a
    change in xgrammar's output fails loudly rather than leaving numbers unbounded.
    """
    lines = []
    for line in ebnf.splitlines():
        name, sep, body = line.partition(" ::= ")
        if sep and name in _RULES:
            old, new = _RULES[name]
            if old not in body:
                raise ConstraintError(f"unexpected number rule in the grammar: {line}")
            body = body.replace(old, new)
        if sep and '"\\""' not in body:  # never inside a string's own rule (a pattern)
            body = body.replace(_UNBOUNDED_INTEGER, f"[1-9] [0-9]{{0, {INTEGER_DIGITS - 1}}}")
        lines.append(f"{name}{sep}{body}")
    out = "\n".join(lines)
    if re.search(r"basic_number_digits\{1, -1\}", out):
        raise ConstraintError("the grammar has a number rule of a shape this engine does not bound")
    return out


class Grammars:
    """Compiles constraints for one tokenizer; thread-safe (requests compile on worker threads)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        import xgrammar  # a slow import, paid by the first constrained request only

        self._xgr = xgrammar
        specials = tokenizer.special_ids
        # Added tokens get no bytes, so no grammar can spell its text with one; the stop tokens are
        # allowed once the grammar is complete, and only then.
        vocab = [b"" if i in specials else tokenizer.token_bytes(i) for i in range(tokenizer.vocab_size)]
        info = xgrammar.TokenizerInfo(
            vocab, xgrammar.VocabType.RAW, vocab_size=len(vocab), stop_token_ids=sorted(tokenizer.stop_ids)
        )
        self._compiler = xgrammar.GrammarCompiler(info, max_threads=1, cache_enabled=True)
        self.vocab_size = len(vocab)
        self.vocab = vocab
        self.closing = ClosingTokens.build(vocab, sorted(tokenizer.stop_ids))
        self._lock = threading.Lock()

    def matcher(self, constraint: OutputConstraint, budget: int | None = None) -> Matcher:
        """A fresh matcher for ``constraint``; ``budget`` is the request's token limit (closing, above)."""
        xgr = self._xgr
        try:
            with self._lock:
                if constraint.json_schema is not None:
                    grammar = xgr.Grammar.from_json_schema(
                        constraint.json_schema, any_whitespace=False, strict_mode=True
                    )
                    compiled = self._compiler.compile_grammar(bounded_numbers(str(grammar)))
                elif constraint.tools:
                    if constraint.tool_format != "hermes":
                        raise ConstraintError(f"tool-call format {constraint.tool_format!r} is not supported")
                    schema = json.dumps(_tool_call_schema(constraint))
                    arguments = xgr.Grammar.from_json_schema(schema, any_whitespace=False, strict_mode=True)
                    grammar = xgr.Grammar.concat(
                        xgr.Grammar.from_ebnf('root ::= "<tool_call>\\n"'),
                        xgr.Grammar.from_ebnf(bounded_numbers(str(arguments))),
                        xgr.Grammar.from_ebnf('root ::= "\\n</tool_call>"'),
                    )
                    compiled = self._compiler.compile_grammar(grammar)
                else:
                    raise ConstraintError("the constraint names neither a schema nor tools")
        except (RuntimeError, ValueError, json.JSONDecodeError) as exc:
            if isinstance(exc, ConstraintError):
                raise
            raise ConstraintError(f"the schema cannot be used for constrained decoding: {exc}") from exc
        return Matcher(xgr.GrammarMatcher(compiled), self, budget)

    def allocate(self, rows: int) -> Bitmask:
        """Masks for ``rows`` rows, every token allowed (a set bit allows its token)."""
        return np.full((rows, -(-self.vocab_size // 32)), -1, dtype=np.int32)


class Matcher:
    """One request's grammar state; used on the engine thread only.

    ``budget`` (the request's token limit) turns on closing within it (``closing``).
    """

    def __init__(self, matcher: Any, grammars: Grammars, budget: int | None = None) -> None:
        self._matcher = matcher
        self.grammars = grammars
        self.accepted = 0
        self.budget = budget
        self.reserve = 0 if budget is None else closing_reserve(budget)
        self.string = StringState()
        #: The shortest finish last measured (``None``: not measured, or longer than the look-ahead).
        self.finish: list[int] | None = None
        self._scratch = grammars.allocate(1)
        #: Closing began (decided in ``steer``): once it has, it lasts, and the finish is
        #: measured again at every step.
        self.closing = False
        #: The length of the finish last traced, less the tokens of it accepted since.
        self.need: int | None = None

    def fill(self, bitmask: Bitmask, row: int) -> None:
        self._matcher.fill_next_token_bitmask(bitmask, row)

    def accept(self, token: int) -> None:
        if not self._matcher.is_terminated() and not self._matcher.accept_token(token):
            raise RuntimeError(f"token {token} was sampled against its grammar")
        self.accepted += 1
        self.string.feed(self.grammars.vocab[token] if token < len(self.grammars.vocab) else b"")
        if self.finish:
            # On the finish, the rest of it is the finish from here (it is traced greedily).
            on_it = token == self.finish[0]
            self.finish = self.finish[1:] if on_it else None
            if on_it and self.need is not None:
                self.need -= 1

    def steer(self, allowed: Allowed, words: Bitmask) -> Allowed:
        """``allowed`` (one row; ``words`` is its packed mask), narrowed near the end of the budget."""
        if self.budget is None or self._matcher.is_terminated():
            return allowed
        left = self.budget - self.accepted
        if left > self.reserve + LOOKAHEAD_LIMIT + MARGIN:
            return allowed  # no finish the look-ahead could find is long enough to matter yet
        # A finish stays right while its tokens are the ones accepted; it is traced again after a
        # token off it, and every few tokens before closing.
        if self.finish is None and (self.closing or self.accepted % MEASURE_EVERY == 0):
            self.finish = self._shortest_finish()
            self.need = None if self.finish is None else len(self.finish)
        self.closing = (
            self.closing or left <= self.reserve or (self.need is not None and left <= self.need + MARGIN)
        )
        if not self.closing:
            return allowed
        if self.finish and len(self.finish) + MARGIN >= left:
            # Within the margin of the finish: the model's own choices could lengthen it past the
            # budget (a number written as ``1e+0``), so the finish is written from here.
            only = np.zeros_like(allowed)
            only[self.finish[0]] = True
            return only
        # The longest closer allowed: the one the finish takes too, so the finish stays traced.
        closers = self.grammars.closing.closers(words, self.string)
        if closers.size == 0:
            return allowed
        only = np.zeros_like(allowed)
        only[int(closers[0])] = True
        return only

    def _shortest_finish(self) -> list[int] | None:
        """The tokens of a short valid finish from here, stop token included (traced on a fork)."""
        probe, state = self._matcher.fork(), self.string.copy()
        path: list[int] = []
        words = self._scratch[0]
        while len(path) < LOOKAHEAD_LIMIT:
            probe.fill_next_token_bitmask(self._scratch, 0)
            token = self.grammars.closing.shortest_step(words, state)
            if token is None:
                return None
            path.append(token)
            if token in self.grammars.closing.stop_ids:
                return path
            if not probe.accept_token(token):
                return None
            state.feed(self.grammars.vocab[token])
        return None


def _unpack(bitmask: Bitmask, width: int) -> Allowed:
    bits = np.unpackbits(bitmask.view(np.uint8), axis=-1, bitorder="little")
    return bits[:, :width].astype(np.bool_)


def apply_masks(logits: npt.NDArray[np.float32] | torch.Tensor, matchers: list[Matcher | None]) -> None:
    """Set to -inf, in place, every logit its row's matcher forbids (rows without one are untouched).
    ``logits``: a numpy array, or a CPU tensor (changed through the numpy view of its memory)."""
    rows = [i for i, m in enumerate(matchers) if m is not None]
    if not rows:
        return
    values = logits if isinstance(logits, np.ndarray) else logits.numpy()
    first = matchers[rows[0]]
    assert first is not None
    bitmask = first.grammars.allocate(len(rows))
    for j, i in enumerate(rows):
        m = matchers[i]
        assert m is not None
        m.fill(bitmask, j)
    allowed = _unpack(bitmask, values.shape[1])
    for j, i in enumerate(rows):
        m = matchers[i]
        assert m is not None
        values[i][~m.steer(allowed[j], bitmask[j])] = -np.inf
