"""Bytes -> a request struct of any protocol, with the Responses decoder's limits and messages.

Chat Completions and Messages bodies go through the same steps as a Responses body
(``_decode.py``): one JSON decode, one pass that bounds every string, count limits on the
list that carries the conversation and on the tools, then one ``msgspec.convert`` whose
validation message becomes a :class:`RequestError` naming the JSON path.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec

from accord.errors import RequestError

from ._decode import _check_strings, _validation_error, first_look
from ._limits import RequestLimits
from ._shape import check_messages_shape

T = TypeVar("T")

_TOP_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`$")


def decode_object(body: bytes | bytearray, limits: RequestLimits) -> dict[str, Any]:
    """The body as a JSON object whose strings are all within the limit."""
    try:
        raw = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise RequestError(f"The request body is not valid JSON: {exc}.", code="invalid_json") from None
    except RecursionError:
        raise RequestError("The request body is nested too deeply.", code="invalid_json") from None
    if not isinstance(raw, dict):
        raise RequestError("The request body must be a JSON object.")
    _check_strings(raw, limits.max_string_chars, limits.max_json_depth)
    return raw


def decode_messages_body(body: bytes | bytearray, limits: RequestLimits) -> dict[str, Any]:
    """A Chat Completions or Messages body as a JSON object, its counts checked before it is built."""
    first_look(check_messages_shape, body, limits)
    raw = decode_object(body, limits)
    check_counts(raw, limits, items="messages")
    return raw


def check_counts(raw: dict[str, Any], limits: RequestLimits, *, items: str) -> None:
    """At most ``max_input_items`` entries in ``raw[items]`` and ``max_tools`` tools."""
    for key, limit, what in (
        (items, limits.max_input_items, "messages"),
        ("tools", limits.max_tools, "tools"),
    ):
        value = raw.get(key)
        if isinstance(value, list) and len(value) > limit:
            raise RequestError(
                f"Too many {what}: {len(value)} (at most {limit}).",
                param=key,
                code="array_above_max_length",
            )


def convert(raw: dict[str, Any], model: type[T]) -> T:
    try:
        return msgspec.convert(raw, model)
    except msgspec.ValidationError as exc:
        error = _validation_error(exc)
        # A required top-level field comes without a path; name it all the same.
        missing = _TOP_MISSING.match(str(exc))
        if error.param is None and missing:
            field = missing["field"]
            raise RequestError(f"Missing required parameter: '{field}'.", param=field) from None
        raise error from None
