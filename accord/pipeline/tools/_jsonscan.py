"""JSON pieces shared by the JSON-argument tool formats (Hermes, Llama 3, Mistral, DeepSeek, Kimi, harmony).

:class:`JsonScanner` finds where a JSON object or array ends while its text arrives in
chunks. It keeps only bracket depth, "inside a string" and "after a backslash", and jumps
between the characters that can change them with a regex, so each character is looked at
once however the text was split (SPEC P8). It does not validate: a call's payload is
validated once, whole, when it has ended. It does reject, at once, a character that cannot
stand outside a JSON string (``<`` of a restarted ``<tool_call>``, ``T`` of ``[TOOL_CALLS]``),
which is how a call abandoned mid-way is noticed without waiting for its end.

Validation is strict JSON (RFC 8259): no ``NaN``/``Infinity``, no raw control characters in
strings, nothing after the value. Argument text is handed on exactly as the model wrote it
(:func:`object_members` returns each member's raw text), never re-serialised.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

#: :meth:`JsonScanner.feed` results besides an end index.
MORE = -1
INVALID = -2

# Outside a string: the next bracket, quote, or a character no JSON token outside a string
# contains (the letters are those of true/false/null, the rest of numbers and separators).
_OUTSIDE = re.compile(r"[^ \t\r\n,:0-9+\-.eEtrufalsn]")
_INSIDE = re.compile(r'["\\]')
_WS_CHARS = " \t\r\n"


def _skip_ws(text: str, i: int) -> int:
    # Between JSON tokens there is rarely more than a space, so a loop beats a regex call.
    n = len(text)
    while i < n and text[i] in _WS_CHARS:
        i += 1
    return i


#: :attr:`JsonScanner.state` values.
OUTSIDE, IN_STRING, AFTER_BACKSLASH = 0, 1, 2


class JsonScanner:
    """Finds the end of one JSON object or array fed in chunks, starting at its bracket.

    ``state`` says where the text fed so far stopped: outside a string, inside one, or inside one
    right after a backslash. At ``IN_STRING`` a chunk with neither a quote nor a backslash changes
    nothing, so a caller may take it in without calling :meth:`feed` (most chunks of a long string
    argument).
    """

    __slots__ = ("_depth", "state")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._depth = 0
        self.state = OUTSIDE

    def feed(self, text: str, start: int = 0) -> int:
        """Index in ``text`` just past the closing bracket, or :data:`MORE`, or :data:`INVALID`.

        Scanning starts at ``start``; everything before it has been fed already.
        """
        state = self.state
        i, n = start, len(text)
        if state != OUTSIDE and '"' not in text:
            # The common chunk of a string argument: no quote, so the string goes on, and only
            # whether it stops inside an escape matters -- an odd run of backslashes at its end.
            if state == IN_STRING and "\\" not in text:
                return MORE  # two scans in C
            if state == AFTER_BACKSLASH and i < n:
                state = IN_STRING
                i += 1  # the escaped character
            j = n
            while j > i and text[j - 1] == "\\":
                j -= 1
            self.state = AFTER_BACKSLASH if (n - j) % 2 else state
            return MORE
        depth = self._depth
        in_string = state != OUTSIDE
        escape = state == AFTER_BACKSLASH
        if escape and i < n:
            escape = False
            i += 1
        while i < n:
            if in_string:
                m = _INSIDE.search(text, i)
                if m is None:
                    break
                j = m.start()
                if text[j] == '"':
                    in_string = False
                    i = j + 1
                elif j + 1 < n:
                    i = j + 2
                else:
                    escape = True
                    break
            else:
                m = _OUTSIDE.search(text, i)
                if m is None:
                    break
                j = m.start()
                c = text[j]
                if c == '"':
                    in_string = True
                elif c == "{" or c == "[":
                    depth += 1
                elif c == "}" or c == "]":
                    depth -= 1
                    if depth == 0:
                        self._depth, self.state = depth, OUTSIDE
                        return j + 1
                else:
                    return INVALID
                i = j + 1
        self._depth = depth
        self.state = AFTER_BACKSLASH if escape else IN_STRING if in_string else OUTSIDE
        return MORE


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
#: The decoder's C scanner (what ``raw_decode`` calls), set on the instance, so not in the stubs.
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


def _value_at(text: str, i: int) -> tuple[Any, int]:
    """Decode the strict JSON value at ``text[i]``; ``ValueError`` when there is none."""
    return _DECODER.raw_decode(text, i)


#: ``decoded`` when a payload was not decoded while it was scanned.
UNDECODED: Any = object()


def value_at(text: str, i: int) -> tuple[Any, int]:
    """The strict JSON value at ``text[i]`` and where it ends; ``(UNDECODED, -1)`` if none.

    The whole of ``text`` is offered to the decoder, so ``text`` should be one payload, not a
    stream's buffer (see :func:`decode_at`).
    """
    try:
        value, end = _SCAN(text, i)  # raw_decode without its wrapper frame
    except (StopIteration, ValueError, RecursionError):
        return UNDECODED, -1
    return value, end


def decode_at(text: str, i: int, limit: int = 8192) -> tuple[Any, int]:
    """The strict JSON value starting at ``text[i]`` and where it ends; ``(UNDECODED, -1)`` if none.

    This is the C decoder: a payload that arrived whole is scanned and decoded in one call.
    Only ``limit`` characters are offered to it (a longer value is left to the scanner),
    because a decoding error costs time in proportion to the text before it.
    """
    window = text[i : i + limit]
    if "}" not in window and "]" not in window:
        return UNDECODED, -1  # no value can end here (a chunk of a stream): spare the raised error
    value, end = value_at(window, 0)
    return (value, i + end) if end >= 0 else (UNDECODED, -1)


def is_object(text: str, decoded: Any = UNDECODED) -> bool:
    """Whether ``text`` is one strict JSON object (``decoded``: its value, when already known)."""
    if decoded is not UNDECODED:
        return isinstance(decoded, dict)
    return is_object_text(text)


def strict_value(text: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``text`` is exactly one strict JSON value (whitespace around allowed)."""
    try:
        i = _skip_ws(text, 0)
        value, end = _value_at(text, i)
    except (ValueError, RecursionError):
        return False, None
    if _skip_ws(text, end) != len(text):
        return False, None
    return True, value


def is_object_text(text: str) -> bool:
    """Whether ``text`` is one strict JSON object."""
    ok, value = strict_value(text)
    return ok and isinstance(value, dict)


def object_members(text: str) -> dict[str, tuple[Any, str]] | None:
    """Members of the strict JSON object ``text``: key -> (value, the value's raw text).

    ``None`` unless ``text`` is exactly one object. A repeated key keeps its first value.
    """
    try:
        i = _skip_ws(text, 0)
        if text[i : i + 1] != "{":
            return None
        i = _skip_ws(text, i + 1)
        members: dict[str, tuple[Any, str]] = {}
        if text[i : i + 1] == "}":
            i += 1
        else:
            while True:
                key, i = _value_at(text, i)
                if not isinstance(key, str):
                    return None
                i = _skip_ws(text, i)
                if text[i : i + 1] != ":":
                    return None
                i = _skip_ws(text, i + 1)
                value, end = _value_at(text, i)
                members.setdefault(key, (value, text[i:end]))
                i = _skip_ws(text, end)
                sep = text[i : i + 1]
                i = _skip_ws(text, i + 1)
                if sep == "}":
                    break
                if sep != ",":
                    return None
    except (ValueError, RecursionError):
        return None
    if _skip_ws(text, i) != len(text):
        return None
    return members


def array_elements(text: str) -> list[tuple[Any, str]] | None:
    """Elements of the strict JSON array ``text``: (value, the value's raw text) each."""
    try:
        i = _skip_ws(text, 0)
        if text[i : i + 1] != "[":
            return None
        i = _skip_ws(text, i + 1)
        elements: list[tuple[Any, str]] = []
        if text[i : i + 1] == "]":
            i += 1
        else:
            while True:
                value, end = _value_at(text, i)
                elements.append((value, text[i:end]))
                i = _skip_ws(text, end)
                sep = text[i : i + 1]
                i = _skip_ws(text, i + 1)
                if sep == "]":
                    break
                if sep != ",":
                    return None
    except (ValueError, RecursionError):
        return None
    if _skip_ws(text, i) != len(text):
        return None
    return elements


def arguments_text(member: tuple[Any, str] | None) -> str | None:
    """The arguments of a call as JSON object text, from a wrapper's ``arguments`` member.

    An object is taken as written; a string holding an object (some models encode the
    arguments twice) gives that inner text; a missing or ``null`` member is a call without
    arguments, ``"{}"``. Anything else is not a call.
    """
    if member is None:
        return "{}"
    value, raw = member
    if value is None:
        return "{}"
    if isinstance(value, dict):
        return raw
    if isinstance(value, str):
        inner = value.strip()
        return inner if is_object_text(inner) else None
    return None


__all__ = [
    "AFTER_BACKSLASH",
    "INVALID",
    "IN_STRING",
    "MORE",
    "OUTSIDE",
    "UNDECODED",
    "JsonScanner",
    "arguments_text",
    "array_elements",
    "decode_at",
    "is_object",
    "is_object_text",
    "object_members",
    "strict_value",
    "value_at",
]
