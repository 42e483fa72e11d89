"""A Chat Completions body -> :class:`Conversation`, through the Responses path's own turns.

Strategy: each chat message becomes the Responses input items it means (a system or user
message, an assistant turn's reasoning, text and calls, a tool result), each with its JSON
path, and the same ``_Turns`` builder the Responses path uses folds them into chat
messages. So the templates, the developer -> system rule, the folding of one turn's calls
and the binding of each tool result to its call by id are one code path for both
protocols, and an error names the chat field (``messages[2].content``), not an item.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from accord.errors import RequestError
from accord.pipeline.segments import ToolSpec

from . import _wire as rw
from ._body import convert, decode_messages_body
from ._chat_wire import (
    AssistantMessage,
    AudioContent,
    ChatCompletionsRequest,
    ChatMessageParam,
    ChatToolChoice,
    ChoiceAllowed,
    ChoiceCustom,
    ChoiceFunction,
    CustomToolCall,
    DeveloperMessage,
    FileContent,
    FunctionTool,
    GrammarFormat,
    ImageContent,
    RefusalContent,
    ResponseFormatJsonObject,
    ResponseFormatJsonSchema,
    SystemMessage,
    TextContent,
    ToolMessage,
    UserMessage,
    UserPart,
)
from ._conversation import Conversation, ToolChoiceValue
from ._limits import RequestLimits
from ._normalize import NormalizeOptions, _item_text, _Turns, explicit_item
from ._tools import custom_tool_spec, function_tool_spec, resolve_tool_choice, unique_tools


def decode_chat_request(body: bytes | bytearray, limits: RequestLimits) -> ChatCompletionsRequest:
    """Decode and validate a Chat Completions body; anything wrong is a 400 naming the field."""
    raw = decode_messages_body(body, limits)
    messages = raw.get("messages")
    if isinstance(messages, list):
        for i, message in enumerate(messages):
            if isinstance(message, dict) and message.get("role") == "function":
                raise RequestError(
                    f"Message messages[{i}] has the deprecated role 'function'; send tool results as "
                    "'tool' messages answering a tool call by its id.",
                    param=f"messages[{i}].role",
                )
    request = convert(raw, ChatCompletionsRequest)
    if request.n is not None and request.n > 1:
        raise RequestError("This server returns one choice per request; 'n' must be 1.", param="n")
    return request


def normalize_chat(request: ChatCompletionsRequest, *, options: NormalizeOptions) -> Conversation:
    """What templates render and the pipeline reads, for one Chat Completions request."""
    items = [pair for i, m in enumerate(request.messages) for pair in _items(m, f"messages[{i}]")]
    tool_choice, tools = _tool_choice(request.tool_choice, unique_tools(list(_tools(request))))
    turns = _Turns(options)
    for item, path in items:
        turns.add(item, path)
    messages = turns.finish()
    if not messages:
        raise RequestError("The request's messages carry no content.", param="messages")
    last = items[-1][0] if items else None
    stop = (request.stop,) if isinstance(request.stop, str) else tuple(request.stop or ())
    return Conversation(
        messages=tuple(messages),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=True if request.parallel_tool_calls is None else request.parallel_tool_calls,
        thinking=_thinking(request),
        max_output_tokens=request.max_completion_tokens or request.max_tokens,
        temperature=request.temperature,
        top_p=request.top_p,
        seed=request.seed,
        stop=tuple(s for s in stop if s),
        input_items=[explicit_item(item) for item, _ in items],
        last_input=_item_text(last, options) if last is not None else "",
        last_item_type=rw.tag_of(last) if last is not None else "",
        prompt_cache_key=request.prompt_cache_key,
        text_format=_text_format(request),
    )


def _thinking(request: ChatCompletionsRequest) -> bool | None:
    if request.reasoning_effort is not None:
        return request.reasoning_effort != "none"
    kwargs = request.chat_template_kwargs or {}
    for key in ("enable_thinking", "thinking"):
        if isinstance(kwargs.get(key), bool):
            return bool(kwargs[key])
    return None


def _text_format(request: ChatCompletionsRequest) -> dict[str, Any] | None:
    fmt = request.response_format
    if isinstance(fmt, ResponseFormatJsonObject):
        return {"type": "json_object"}
    if isinstance(fmt, ResponseFormatJsonSchema):
        spec = fmt.json_schema
        out: dict[str, Any] = {"type": "json_schema", "name": spec.name, "schema": spec.schema or {}}
        if spec.strict is not None:
            out["strict"] = spec.strict
        if spec.description is not None:
            out["description"] = spec.description
        return out
    return None


# --- messages -> items ---------------------------------------------------------------------


def _user_part(part: UserPart) -> rw.ContentPart:
    if isinstance(part, TextContent):
        return rw.InputText(text=part.text)
    if isinstance(part, ImageContent):
        return rw.InputImage(image_url=part.image_url.url, detail=part.image_url.detail)
    if isinstance(part, AudioContent):
        return rw.InputAudio(input_audio=part.input_audio)
    assert isinstance(part, FileContent)
    return rw.InputFile(file_id=part.file.file_id, file_data=part.file.file_data, filename=part.file.filename)


def _texts(content: str | list[TextContent]) -> str | list[rw.ContentPart]:
    if isinstance(content, str):
        return content
    return [rw.InputText(text=p.text) for p in content]


def _empty(content: object) -> bool:
    return content == "" or content == []


def _items(message: ChatMessageParam, path: str) -> Iterator[tuple[rw.InputItem, str]]:
    if isinstance(message, SystemMessage | DeveloperMessage):
        if not _empty(message.content):
            role: Literal["system", "developer"] = (
                "system" if isinstance(message, SystemMessage) else "developer"
            )
            yield rw.Message(role=role, content=_texts(message.content)), path
    elif isinstance(message, UserMessage):
        if not _empty(message.content):
            content = message.content
            parts = content if isinstance(content, str) else [_user_part(p) for p in content]
            yield rw.Message(role="user", content=parts), path
    elif isinstance(message, AssistantMessage):
        yield from _assistant(message, path)
    else:
        assert isinstance(message, ToolMessage)
        yield rw.FunctionCallOutput(call_id=message.tool_call_id, output=_texts(message.content)), path


def _assistant(message: AssistantMessage, path: str) -> Iterator[tuple[rw.InputItem, str]]:
    reasoning = message.reasoning_content or message.reasoning
    if reasoning:
        yield rw.ReasoningItem(content=[rw.ReasoningText(text=reasoning)]), path
    content = message.content
    if isinstance(content, str) and content:
        yield rw.Message(role="assistant", content=[rw.OutputText(text=content)]), f"{path}.content"
    elif isinstance(content, list) and content:
        parts: list[rw.ContentPart] = [
            rw.OutputText(text=p.text) if isinstance(p, TextContent) else rw.Refusal(refusal=p.refusal)
            for p in content
            if isinstance(p, TextContent | RefusalContent)
        ]
        yield rw.Message(role="assistant", content=parts), f"{path}.content"
    if message.refusal:
        yield rw.Message(role="assistant", content=[rw.Refusal(refusal=message.refusal)]), f"{path}.refusal"
    for j, call in enumerate(message.tool_calls or []):
        where = f"{path}.tool_calls[{j}]"
        if isinstance(call, CustomToolCall):
            yield rw.CustomToolCall(call_id=call.id, name=call.custom.name, input=call.custom.input), where
        else:
            fn = call.function
            yield rw.FunctionCall(call_id=call.id, name=fn.name, arguments=fn.arguments), where


# --- tools ---------------------------------------------------------------------------------


def _tools(request: ChatCompletionsRequest) -> Iterator[tuple[ToolSpec, str]]:
    for i, tool in enumerate(request.tools or []):
        if isinstance(tool, FunctionTool):
            fn = tool.function
            spec = rw.FunctionTool(
                name=fn.name, description=fn.description, parameters=fn.parameters, strict=fn.strict
            )
            yield function_tool_spec(spec), f"tools[{i}].function"
        else:
            custom = tool.custom
            fmt = custom.format
            wire_format: rw.TextGrammarFormat | rw.GrammarFormat | None = None
            if isinstance(fmt, GrammarFormat):
                wire_format = rw.GrammarFormat(syntax=fmt.grammar.syntax, definition=fmt.grammar.definition)
            yield (
                custom_tool_spec(
                    rw.CustomTool(name=custom.name, description=custom.description, format=wire_format)
                ),
                f"tools[{i}].custom",
            )


def _tool_choice(
    choice: ChatToolChoice | None, tools: tuple[ToolSpec, ...]
) -> tuple[ToolChoiceValue, tuple[ToolSpec, ...]]:
    """Chat's nested tool_choice shapes as the Responses ones, errors naming the chat fields."""
    if choice is None or isinstance(choice, str):
        return resolve_tool_choice(choice, tools)
    if isinstance(choice, ChoiceFunction):
        return _renamed(rw.ToolChoiceFunction(name=choice.function.name), tools, "tool_choice.function")
    if isinstance(choice, ChoiceCustom):
        return _renamed(rw.ToolChoiceCustom(name=choice.custom.name), tools, "tool_choice.custom")
    assert isinstance(choice, ChoiceAllowed)
    refs: list[rw.AllowedToolRef] = []
    for i, entry in enumerate(choice.allowed_tools.tools):
        kind = entry.get("type")
        named = entry.get(kind) if isinstance(kind, str) else None
        name = named.get("name") if isinstance(named, dict) else None
        if not isinstance(kind, str) or not isinstance(name, str):
            raise RequestError(
                "allowed_tools entries name a tool as {'type': 'function', 'function': {'name': ...}}.",
                param=f"tool_choice.allowed_tools.tools[{i}]",
            )
        refs.append(rw.AllowedToolRef(type=kind, name=name))
    allowed = rw.ToolChoiceAllowed(mode=choice.allowed_tools.mode, tools=refs)
    try:
        return resolve_tool_choice(allowed, tools)
    except RequestError as exc:
        raise _with_param(exc, exc.param, "tool_choice.tools", "tool_choice.allowed_tools.tools") from None


def _renamed(
    choice: rw.ToolChoice, tools: tuple[ToolSpec, ...], where: str
) -> tuple[ToolChoiceValue, tuple[ToolSpec, ...]]:
    try:
        return resolve_tool_choice(choice, tools)
    except RequestError as exc:
        raise _with_param(exc, exc.param, "tool_choice", where) from None


def _with_param(exc: RequestError, param: str | None, old: str, new: str) -> RequestError:
    if param is not None and param.startswith(old):
        param = new + param[len(old) :]
    return RequestError(exc.message, param=param, status=exc.status, code=exc.code, type=exc.type)
