"""JsonPrefix: is the text so far the start of one JSON object? One pass, one character at a time.

Why: a Messages client parses a tool_use block's ``input_json_delta`` text after every delta
(anthropic's accumulator runs a partial JSON parser on the whole buffer and raises on
anything that is not the start of valid JSON). A tool-call parser streams a call's arguments
before it can know they will stay JSON (a raw newline inside a string is only found invalid
when the call ends), so the Messages projection sends argument deltas only while they keep
the buffer a valid prefix, and checks that here at O(1) per character.

Theory of operation: a pushdown automaton over RFC 8259 with an enum state, a stack of open
containers, and the sub-states of strings, numbers and literals. Once broken it stays broken.
The top level must be an object, since call arguments are one.
"""

from __future__ import annotations

import enum

_WS = frozenset(" \t\n\r")
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPES = frozenset('"\\/bfnrt')
_LITERALS = {"t": "rue", "f": "alse", "n": "ull"}


class _S(enum.Enum):
    START = "start"  # nothing but whitespace yet; '{' must come
    VALUE = "value"  # a value must come (after ':' or ',' in an array, or '[')
    KEY_OR_END = "key_or_end"  # just after '{'
    KEY = "key"  # after ',' in an object
    COLON = "colon"
    AFTER = "after"  # a value ended: ',' or the container's close
    STRING = "string"
    ESCAPE = "escape"
    UNICODE = "unicode"
    LOW_SLASH = "low_slash"  # a high surrogate escape must be followed by a low one: '\\'
    LOW_U = "low_u"  # ... then 'u'
    NUMBER = "number"
    LITERAL = "literal"
    DONE = "done"  # the top-level object closed; only whitespace may follow
    BROKEN = "broken"


# Number sub-states, and those a number may end in.
_SIGN, _ZERO, _INT, _DOT, _FRAC, _EXP, _EXP_SIGN, _EXP_DIGITS = range(8)
_NUMBER_ENDS = frozenset({_ZERO, _INT, _FRAC, _EXP_DIGITS})


class JsonPrefix:
    """``feed(text) -> still a valid prefix of one JSON object``."""

    __slots__ = (
        "_code",
        "_empty_array",
        "_hex_left",
        "_is_key",
        "_literal",
        "_number",
        "_stack",
        "_want_low",
        "state",
    )

    def __init__(self) -> None:
        self.state = _S.START
        self._stack: list[str] = []
        self._is_key = False
        self._hex_left = 0
        self._code = 0
        #: The escape being read must be a low surrogate (jiter refuses lone surrogates).
        self._want_low = False
        self._number = _SIGN
        self._literal = ""
        #: Just after '[': the one place ']' may follow without a value.
        self._empty_array = False

    @property
    def broken(self) -> bool:
        return self.state is _S.BROKEN

    @property
    def complete(self) -> bool:
        """The object has closed (whitespace may follow)."""
        return self.state is _S.DONE

    def feed(self, text: str) -> bool:
        for ch in text:
            if self.state is _S.BROKEN:
                return False
            self._step(ch)
        return self.state is not _S.BROKEN

    def _step(self, ch: str) -> None:
        state = self.state
        if state is _S.STRING:
            if ch == '"':
                self.state = _S.COLON if self._is_key else _S.AFTER
            elif ch == "\\":
                self.state = _S.ESCAPE
            elif ord(ch) < 0x20:
                self.state = _S.BROKEN
        elif state is _S.ESCAPE:
            if ch == "u":
                self.state, self._hex_left, self._code = _S.UNICODE, 4, 0
            else:
                self.state = _S.STRING if ch in _ESCAPES else _S.BROKEN
        elif state is _S.UNICODE:
            if ch not in _HEX:
                self.state = _S.BROKEN
            else:
                self._code = self._code * 16 + int(ch, 16)
                self._hex_left -= 1
                if self._hex_left == 0:
                    self._escaped()
        elif state is _S.LOW_SLASH:
            self.state = _S.LOW_U if ch == "\\" else _S.BROKEN
        elif state is _S.LOW_U:
            self.state, self._hex_left, self._code = (_S.UNICODE, 4, 0) if ch == "u" else (_S.BROKEN, 0, 0)
        elif state is _S.NUMBER:
            self._number_step(ch)
        elif state is _S.LITERAL:
            if ch != self._literal[0]:
                self.state = _S.BROKEN
            else:
                self._literal = self._literal[1:]
                if not self._literal:
                    self.state = _S.AFTER
        elif ch in _WS:
            pass
        else:
            self._token(ch)

    def _escaped(self) -> None:
        high = 0xD800 <= self._code <= 0xDBFF
        low = 0xDC00 <= self._code <= 0xDFFF
        if self._want_low:
            self._want_low = False
            self.state = _S.STRING if low else _S.BROKEN
        elif high:
            self._want_low, self.state = True, _S.LOW_SLASH
        else:
            self.state = _S.BROKEN if low else _S.STRING

    def _token(self, ch: str) -> None:
        state = self.state
        if state is _S.START:
            self._open(ch) if ch == "{" else self._break()
        elif state in (_S.KEY_OR_END, _S.KEY):
            if ch == '"':
                self.state, self._is_key = _S.STRING, True
            elif ch == "}" and state is _S.KEY_OR_END:
                self._close(ch)
            else:
                self._break()
        elif state is _S.COLON:
            self.state = _S.VALUE if ch == ":" else _S.BROKEN
        elif state is _S.VALUE:
            if ch == "]" and self._stack and self._stack[-1] == "[" and self._empty_array:
                self._close(ch)
            else:
                self._value(ch)
        elif state is _S.AFTER:
            if ch == ",":
                self.state = _S.KEY if self._stack[-1] == "{" else _S.VALUE
                self._empty_array = False
            elif ch in "}]":
                self._close(ch)
            else:
                self._break()
        else:  # DONE: nothing but whitespace after the object
            self._break()

    def _value(self, ch: str) -> None:
        self._empty_array = False
        if ch == '"':
            self.state, self._is_key = _S.STRING, False
        elif ch in "{[":
            self._open(ch)
        elif ch == "-" or ch in _DIGITS:
            self.state = _S.NUMBER
            self._number = _SIGN if ch == "-" else _ZERO if ch == "0" else _INT
        elif ch in _LITERALS:
            self.state, self._literal = _S.LITERAL, _LITERALS[ch]
        else:
            self._break()

    def _open(self, ch: str) -> None:
        self._stack.append(ch)
        if ch == "{":
            self.state = _S.KEY_OR_END
        else:
            self.state, self._empty_array = _S.VALUE, True

    def _close(self, ch: str) -> None:
        if not self._stack or {"{": "}", "[": "]"}[self._stack[-1]] != ch:
            self._break()
            return
        self._stack.pop()
        self.state = _S.AFTER if self._stack else _S.DONE

    def _break(self) -> None:
        self.state = _S.BROKEN

    def _number_step(self, ch: str) -> None:
        n = self._number
        digit = ch in _DIGITS
        if n == _SIGN:
            self._number = _ZERO if ch == "0" else _INT if digit else -1
        elif n in (_ZERO, _INT):
            if digit and n == _INT:
                return
            if ch == ".":
                self._number = _DOT
            elif ch in "eE":
                self._number = _EXP
            else:
                self._end_number(ch)
                return
        elif n in (_DOT, _FRAC):
            if digit:
                self._number = _FRAC
            elif n == _FRAC and ch in "eE":
                self._number = _EXP
            elif n == _FRAC:
                self._end_number(ch)
                return
            else:
                self._number = -1
        elif n in (_EXP, _EXP_SIGN):
            if digit:
                self._number = _EXP_DIGITS
            elif n == _EXP and ch in "+-":
                self._number = _EXP_SIGN
            else:
                self._number = -1
        elif digit:
            return
        else:
            self._end_number(ch)
            return
        if self._number == -1:
            self._break()

    def _end_number(self, ch: str) -> None:
        """The number ended at ``ch``, which is then read as whatever follows a value."""
        self.state = _S.AFTER if self._number in _NUMBER_ENDS else _S.BROKEN
        if self.state is _S.AFTER and ch not in _WS:
            self._token(ch)
