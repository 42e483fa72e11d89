"""The cheap first look at a request body: counts and sizes, before the body is built (SPEC I12).

Strategy: decoding a body into plain Python values costs about 25 bytes of memory per byte
of a many-part body and holds the interpreter for the whole call, so the limits that bound
that cost must be checked before it. msgspec decodes into the small structs below without
building anything it is not asked for: unknown fields are skipped, a content part becomes
one empty object, a tool schema stays a slice of the body (:class:`msgspec.Raw`). What this
pass measures is what the limits are about: input items, content parts, tools (namespace
members and ``additional_tools`` included) and the bytes of every schema.

A body whose shape these structs do not accept is invalid for the full request model too;
the caller decides whether to decode it again for the full model's message.
"""

from __future__ import annotations

import msgspec

from accord.errors import RequestError

from ._limits import RequestLimits


class _Part(msgspec.Struct):
    pass


class _Tool(msgspec.Struct):
    type: str | None = None
    parameters: msgspec.Raw = msgspec.Raw()
    tools: list[_Tool] | None = None


class _Item(msgspec.Struct):
    type: str | None = None
    content: str | list[_Part] | None = None
    output: str | list[_Part] | dict[str, msgspec.Raw] | None = None
    tools: list[_Tool] | None = None


class _Format(msgspec.Struct):
    schema: msgspec.Raw = msgspec.Raw()


class _Text(msgspec.Struct):
    format: _Format | None = None


class _Shape(msgspec.Struct):
    input: str | list[_Item] | None = None
    tools: list[_Tool] | None = None
    text: _Text | None = None


_decoder = msgspec.json.Decoder(_Shape)


def _too_many(what: str, count: int, limit: int, param: str) -> RequestError:
    return RequestError(
        f"Too many {what}: {count} (at most {limit}).", param=param, code="array_above_max_length"
    )


def _too_many_parts(limits: RequestLimits, at: str) -> RequestError:
    return RequestError(
        f"Too many content parts: more than {limits.max_content_parts} in the request, reached at {at}.",
        param=at,
        code="array_above_max_length",
    )


class _Block(msgspec.Struct):
    """A Chat part or a Messages content block; a ``tool_result`` block holds parts of its own."""

    content: str | list[_Part] | None = None


class _Message(msgspec.Struct):
    content: str | list[_Block] | None = None


class _MessagesShape(msgspec.Struct):
    """Chat Completions and Messages bodies: the same counts over ``messages``."""

    messages: list[_Message] | None = None
    tools: list[_Part] | None = None
    #: Messages' top-level system prompt, which may be a list of text blocks.
    system: str | list[_Part] | None = None


_messages_decoder = msgspec.json.Decoder(_MessagesShape)


def check_messages_shape(body: bytes | bytearray, limits: RequestLimits) -> None:
    """The cheap first look at a Chat Completions or Messages body: messages, content parts
    (a tool result's own included) and tools, counted before the body is built.

    Raises ``msgspec.ValidationError`` or ``msgspec.DecodeError`` as :func:`check_shape` does.
    """
    try:
        shape = _messages_decoder.decode(body)
    except RecursionError:
        raise RequestError("The request body is nested too deeply.", code="invalid_json") from None
    if shape.tools is not None and len(shape.tools) > limits.max_tools:
        raise _too_many("tools", len(shape.tools), limits.max_tools, "tools")
    messages = shape.messages or []
    if len(messages) > limits.max_input_items:
        raise _too_many("messages", len(messages), limits.max_input_items, "messages")
    parts = len(shape.system) if isinstance(shape.system, list) else 0
    if parts > limits.max_content_parts:
        raise _too_many_parts(limits, "system")
    for i, message in enumerate(messages):
        if not isinstance(message.content, list):
            continue
        parts += len(message.content) + sum(
            len(block.content) for block in message.content if isinstance(block.content, list)
        )
        if parts > limits.max_content_parts:
            raise _too_many_parts(limits, f"messages[{i}].content")


def check_shape(body: bytes | bytearray, limits: RequestLimits) -> None:
    """Raise :class:`RequestError` when ``body`` breaks a count or size limit.

    Raises ``msgspec.ValidationError`` or ``msgspec.DecodeError`` when the body does not
    have the request's shape at all (the caller turns those into a 400).
    """
    try:
        shape = _decoder.decode(body)
    except RecursionError:
        raise RequestError("The request body is nested too deeply.", code="invalid_json") from None
    tools = _count_tools(shape.tools, "tools", limits)
    if isinstance(shape.input, list):
        if len(shape.input) > limits.max_input_items:
            raise _too_many("input items", len(shape.input), limits.max_input_items, "input")
        parts = 0
        for i, item in enumerate(shape.input):
            for field, value in (("content", item.content), ("output", item.output)):
                if isinstance(value, list):
                    parts += len(value)
                    if parts > limits.max_content_parts:
                        raise _too_many_parts(limits, f"input[{i}].{field}")
            if item.tools is not None:
                tools += _count_tools(item.tools, f"input[{i}].tools", limits)
    if tools > limits.max_tools:
        raise _too_many("tools", tools, limits.max_tools, "tools")
    if shape.text is not None and shape.text.format is not None:
        _check_schema(shape.text.format.schema, "text.format.schema", limits)


def _count_tools(tools: list[_Tool] | None, path: str, limits: RequestLimits) -> int:
    if tools is None:
        return 0
    if len(tools) > limits.max_tools:
        # Counted before looking inside, so a long list costs nothing more.
        raise RequestError(
            f"Too many tools: {len(tools)} (at most {limits.max_tools}).",
            param=path,
            code="array_above_max_length",
        )
    count = 0
    for i, tool in enumerate(tools):
        _check_schema(tool.parameters, f"{path}[{i}].parameters", limits)
        if tool.type == "namespace" and tool.tools is not None:
            count += _count_tools(tool.tools, f"{path}[{i}].tools", limits)
        else:
            count += 1
    return count


def _check_schema(schema: msgspec.Raw, path: str, limits: RequestLimits) -> None:
    if len(schema) > limits.max_schema_bytes:
        raise RequestError(
            f"Schema too large at '{path}': {len(schema)} bytes (at most {limits.max_schema_bytes}).",
            param=path,
            code="schema_too_large",
        )
