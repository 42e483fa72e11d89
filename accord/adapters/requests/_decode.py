"""Bytes -> :class:`ResponsesRequest`, or a 400 that names the JSON path (SPEC I11, I12).

Strategy: first a shape pass (:mod:`._shape`) that counts items, parts and tools and sizes
every schema without building the body, so a body over a limit costs almost nothing; then
decode the JSON once into plain values, walk it once (iteratively: depth is the client's to
choose) to enforce the string and nesting limits and to give untagged items their tag, then
let msgspec convert the tree into typed structs. The walk keeps, per container, only a link
to its parent; the JSON path is spelled out only for the node an error reports, so the walk
costs O(size) with no string built per node. msgspec's own validation messages end in
`` - at `$.input[3].content` ``; that path becomes the error's ``param``. Whatever the
bytes, the only exception that leaves :func:`decode_request` is :class:`RequestError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeAlias

import msgspec

from accord.errors import RequestError

from ._limits import RequestLimits
from ._shape import check_shape
from ._wire import (
    HOSTED_TOOL_TYPES,
    ITEM_TYPES,
    REFUSED_ITEM_TYPES,
    TOOL_CHOICE_TYPES,
    TOOL_TYPES,
    ResponsesRequest,
)

_AT = re.compile(r"^(?P<msg>.*?) - at `\$(?P<path>[^`]*)`$", re.S)
#: msgspec's spelling for a bad dict key: ``... - at `key` in `$.metadata```.
_AT_KEY = re.compile(r"^(?P<msg>.*?) - at `key` in `\$(?P<path>[^`]*)`$", re.S)
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`$")


def _path_param(path: str) -> str | None:
    """``$.input[3].type`` arrives as ``.input[3].type``; the param is ``input[3].type``."""
    return path[1:] if path.startswith(".") else (path or None)


def join(base: str | None, key: str | int) -> str:
    if isinstance(key, int):
        return f"{base or ''}[{key}]"
    return f"{base}.{key}" if base else key


def _validation_error(exc: msgspec.ValidationError) -> RequestError:
    text = str(exc)
    key = _AT_KEY.match(text)
    if key is not None:
        param = _path_param(key["path"])
        return RequestError(f"Invalid key in '{param or 'body'}': {key['msg']}.", param=param)
    match = _AT.match(text)
    if match is None:
        return RequestError(f"Invalid request: {text}")
    message, param = match["msg"], _path_param(match["path"])
    missing = _MISSING.match(message)
    if missing:
        param = join(param, missing["field"])
        return RequestError(f"Missing required parameter: '{param}'.", param=param)
    return RequestError(f"Invalid value at '{param or 'body'}': {message}.", param=param)


#: Below this size a body whose shape is wrong is decoded in full for the exact message.
FULL_MESSAGE_BYTES = 1 << 20


def first_look(
    check: Callable[[bytes | bytearray, RequestLimits], None], body: bytes | bytearray, limits: RequestLimits
) -> None:
    """Run a shape pass (``check``). A body of the wrong shape is left to the full decode, whose
    message names the field as the model does, unless it is too large to decode for that."""
    try:
        check(body, limits)
    except msgspec.ValidationError as exc:
        if len(body) > FULL_MESSAGE_BYTES:
            raise _validation_error(exc) from None
    except msgspec.DecodeError:
        pass  # the full decode names the JSON error


def decode_request(body: bytes | bytearray, limits: RequestLimits) -> ResponsesRequest:
    """Decode and validate one request body; raise :class:`RequestError` (400) for anything wrong."""
    first_look(check_shape, body, limits)
    try:
        raw = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise RequestError(f"The request body is not valid JSON: {exc}.", code="invalid_json") from None
    except RecursionError:
        raise RequestError("The request body is nested too deeply.", code="invalid_json") from None
    if not isinstance(raw, dict):
        raise RequestError("The request body must be a JSON object.")
    _check_strings(raw, limits.max_string_chars, limits.max_json_depth)
    _prepare(raw, limits)
    try:
        return msgspec.convert(raw, ResponsesRequest)
    except msgspec.ValidationError as exc:
        raise _validation_error(exc) from None


#: A container's place in the body: its key in its parent, and the parent's own place.
_Place: TypeAlias = "tuple[str | int, _Place] | None"


def _spell(place: _Place) -> str | None:
    keys: list[str | int] = []
    while place is not None:
        key, place = place
        keys.append(key)
    path: str | None = None
    for key in reversed(keys):
        path = join(path, key)
    return path


def _check_strings(raw: dict[str, Any], max_chars: int, max_depth: int) -> None:
    """One pass over every string (keys too) and container: lengths and nesting within limits."""
    stack: list[tuple[Any, _Place, int]] = [(raw, None, 1)]
    while stack:
        value, place, depth = stack.pop()
        if depth > max_depth:
            path = _spell(place)
            raise RequestError(
                f"Nested too deeply at '{path or 'body'}': at most {max_depth} levels of arrays and "
                "objects are accepted.",
                param=path,
                code="nested_too_deeply",
            )
        if isinstance(value, dict):
            for key, child in value.items():
                if len(key) > max_chars:
                    raise _too_long(_spell(place), max_chars)
                if isinstance(child, dict | list):
                    stack.append((child, (key, place), depth + 1))
                elif isinstance(child, str) and len(child) > max_chars:
                    raise _too_long(_spell((key, place)), max_chars)
        else:
            for i, child in enumerate(value):
                if isinstance(child, dict | list):
                    stack.append((child, (i, place), depth + 1))
                elif isinstance(child, str) and len(child) > max_chars:
                    raise _too_long(_spell((i, place)), max_chars)


def _too_long(path: str | None, max_chars: int) -> RequestError:
    return RequestError(
        f"String too long at '{path or 'body'}': at most {max_chars} characters are accepted.",
        param=path,
        code="string_above_max_length",
    )


def _prepare(raw: dict[str, Any], limits: RequestLimits) -> None:
    """Enforce count limits, tag untagged items and refuse unsupported types by name."""
    items = raw.get("input")
    if isinstance(items, list):
        if len(items) > limits.max_input_items:
            raise RequestError(
                f"Too many input items: {len(items)} (at most {limits.max_input_items}).",
                param="input",
                code="array_above_max_length",
            )
        tool_count = 0
        for i, item in enumerate(items):
            if isinstance(item, dict):
                _tag_item(item, f"input[{i}]")
                if item.get("type") in ("additional_tools", "tool_search_output"):
                    tool_count += _check_tools(item.get("tools"), f"input[{i}].tools")
        _limit_tools(tool_count + _check_tools(raw.get("tools"), "tools"), limits)
    else:
        _limit_tools(_check_tools(raw.get("tools"), "tools"), limits)
    choice = raw.get("tool_choice")
    if isinstance(choice, dict):
        kind = choice.get("type")
        if isinstance(kind, str) and kind not in TOOL_CHOICE_TYPES:
            raise RequestError(
                f"tool_choice of type '{kind}' is not supported by this server; use 'auto', 'none', "
                "'required', or a function or custom tool.",
                param="tool_choice.type",
            )


def _limit_tools(count: int, limits: RequestLimits) -> None:
    if count > limits.max_tools:
        raise RequestError(
            f"Too many tools: {count} (at most {limits.max_tools}).",
            param="tools",
            code="array_above_max_length",
        )


def _tag_item(item: dict[str, Any], path: str) -> None:
    kind = item.get("type")
    if kind is None:
        # The two untagged shapes of the SDK union: easy messages and item references.
        if "role" in item:
            item["type"] = "message"
        elif "id" in item and "content" not in item:
            item["type"] = "item_reference"
        else:
            raise RequestError(f"Input item {path} has no 'type'.", param=f"{path}.type")
        kind = item["type"]
    if not isinstance(kind, str):
        return  # msgspec names the wrong type
    if kind in REFUSED_ITEM_TYPES:
        raise RequestError(
            f"Input item {path} has type '{kind}', which belongs to a hosted tool this server does "
            "not run; remove it from the input.",
            param=f"{path}.type",
        )
    if kind not in ITEM_TYPES:
        raise RequestError(f"Input item {path} has an unknown type '{kind}'.", param=f"{path}.type")
    if kind in ("message", "function_call_output", "custom_tool_call_output"):
        field = "content" if kind == "message" else "output"
        content = item.get(field)
        if isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict) and part.get("type") == "text":
                    # Chat Completions spelling; the text is unambiguous.
                    part["type"] = "input_text"
                elif isinstance(part, dict) and "type" not in part:
                    raise RequestError(
                        f"Content part {path}.{field}[{j}] has no 'type'.",
                        param=f"{path}.{field}[{j}].type",
                    )


def _check_tools(tools: Any, path: str) -> int:
    """Refuse hosted tool types by name; return how many tools the model would see."""
    if not isinstance(tools, list):
        return 0
    count = 0
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            count += 1
            continue
        kind = tool.get("type")
        if isinstance(kind, str) and kind in HOSTED_TOOL_TYPES:
            raise RequestError(
                f"Tool {path}[{i}] has type '{kind}', a hosted tool this server cannot run; remove it "
                "or offer it as a function tool.",
                param=f"{path}[{i}].type",
                code="unsupported_tool",
            )
        if isinstance(kind, str) and kind not in TOOL_TYPES:
            raise RequestError(f"Tool {path}[{i}] has an unknown type '{kind}'.", param=f"{path}[{i}].type")
        members = tool.get("tools") if kind == "namespace" else None
        count += len(members) if isinstance(members, list) else 1
    return count
