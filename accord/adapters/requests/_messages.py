"""An Anthropic Messages body -> :class:`Conversation`, through the Responses path's own turns.

Strategy, as for Chat Completions (``_chat.py``): every block becomes the Responses input
item it means and ``_Turns`` folds them. A user turn's ``tool_result`` blocks become tool
results bound to their call by ``tool_use_id`` and the text around them user messages, in
order; an assistant turn's ``thinking``, ``text`` and ``tool_use`` blocks become one turn.

A thinking block's ``signature`` is our sealed reasoning (the same seal as
``encrypted_content``, SPEC I4): it is read as a reasoning item that has only sealed text,
so a valid signature replays the exact reasoning whatever ``thinking`` text came with it,
and a signature we did not seal (tampered, or another server's) drops the block with a
warning. ``redacted_thinking`` data is read the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from accord.errors import RequestError
from accord.pipeline.segments import ToolSpec

from . import _wire as rw
from ._body import convert, decode_messages_body
from ._conversation import Conversation, ToolChoiceValue
from ._limits import RequestLimits
from ._messages_wire import (
    Base64Source,
    ContentBlock,
    CountTokensRequest,
    DocumentBlock,
    FileSource,
    ImageBlock,
    MessageParam,
    MessagesRequest,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ThinkingDisabled,
    ToolChoiceAny,
    ToolChoiceAuto,
    ToolChoiceNone,
    ToolChoiceTool,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
)
from ._normalize import NormalizeOptions, _item_text, _Turns, explicit_item
from ._tools import function_tool_spec, resolve_tool_choice, unique_tools


def decode_messages_request(body: bytes | bytearray, limits: RequestLimits) -> MessagesRequest:
    """Decode and validate a Messages body; anything wrong is a 400 naming the field."""
    raw = decode_messages_body(body, limits)
    return convert(raw, MessagesRequest)


def decode_count_tokens_request(body: bytes | bytearray, limits: RequestLimits) -> CountTokensRequest:
    raw = decode_messages_body(body, limits)
    return convert(raw, CountTokensRequest)


def normalize_messages(
    request: MessagesRequest | CountTokensRequest, *, options: NormalizeOptions
) -> Conversation:
    """What templates render and the pipeline reads, for one Messages (or count_tokens) request."""
    items = list(_system(request))
    for i, message in enumerate(request.messages):
        items.extend(_items(message, f"messages[{i}]"))
    tool_choice, tools, parallel = _tool_choice(request, unique_tools(list(_tools(request, options))))
    turns = _Turns(options)
    for item, path in items:
        turns.add(item, path)
    messages = turns.finish()
    if not any(m.role != "system" for m in messages):
        raise RequestError("The request has no messages.", param="messages")
    # A system turn after the last user turn (Claude Code's environment notes) is context, not input.
    said = [item for item, _ in items if not (isinstance(item, rw.Message) and item.role == "system")]
    last = said[-1] if said else None
    thinking = None if request.thinking is None else not isinstance(request.thinking, ThinkingDisabled)
    full = request if isinstance(request, MessagesRequest) else None
    return Conversation(
        messages=tuple(messages),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        thinking=thinking,
        max_output_tokens=full.max_tokens if full else None,
        temperature=full.temperature if full else None,
        top_p=full.top_p if full else None,
        top_k=full.top_k if full else None,
        stop=tuple(s for s in (full.stop_sequences or []) if s) if full else (),
        input_items=[explicit_item(item) for item, _ in items],
        last_input=_item_text(last, options) if last is not None else "",
        last_item_type=rw.tag_of(last) if last is not None else "",
        # Every thinking block goes out with its signature, so the client can replay it.
        include_encrypted_reasoning=True,
    )


def _system(request: CountTokensRequest) -> Iterator[tuple[rw.InputItem, str]]:
    system = request.system
    if isinstance(system, str) and system:
        yield rw.Message(role="system", content=system), "system"
    elif isinstance(system, list) and system:
        yield rw.Message(role="system", content=[rw.InputText(text=b.text) for b in system]), "system"


def _image(block: ImageBlock) -> rw.InputImage:
    source = block.source
    if isinstance(source, Base64Source):
        return rw.InputImage(image_url=f"data:{source.media_type};base64,{source.data}")
    if isinstance(source, URLSource):
        return rw.InputImage(image_url=source.url)
    assert isinstance(source, FileSource)
    return rw.InputImage(file_id=source.file_id)


def _document(block: DocumentBlock) -> rw.InputFile:
    source = block.source
    return rw.InputFile(
        filename=block.title,
        file_id=source.file_id if isinstance(source, FileSource) else None,
        file_url=source.url if isinstance(source, URLSource) else None,
    )


def _part(block: TextBlock | ImageBlock | DocumentBlock) -> rw.ContentPart:
    if isinstance(block, TextBlock):
        return rw.InputText(text=block.text)
    if isinstance(block, ImageBlock):
        return _image(block)
    return _document(block)


def _wrong_role(block: ContentBlock, role: str, where: str) -> RequestError:
    kind = rw.tag_of(block)
    return RequestError(f"A '{kind}' block cannot appear in {role} message ({where}).", param=f"{where}.type")


def _items(message: MessageParam, path: str) -> Iterator[tuple[rw.InputItem, str]]:
    content = message.content
    if isinstance(content, str):
        if message.role in ("user", "system"):
            yield rw.Message(role=message.role, content=content), path
        elif content:
            yield rw.Message(role="assistant", content=[rw.OutputText(text=content)]), path
        return
    if not content:
        raise RequestError(f"Message {path} has no content.", param=f"{path}.content")
    if message.role == "system":
        yield rw.Message(role="system", content=list(_system_parts(content, path))), path
        return
    if message.role == "user":
        yield from _user_blocks(content, path)
    else:
        yield from _assistant_blocks(content, path)


def _system_parts(content: list[ContentBlock], path: str) -> Iterator[rw.ContentPart]:
    for j, block in enumerate(content):
        if not isinstance(block, TextBlock):
            raise _wrong_role(block, "a system", f"{path}.content[{j}]")
        yield rw.InputText(text=block.text)


def _user_blocks(content: list[ContentBlock], path: str) -> Iterator[tuple[rw.InputItem, str]]:
    run: list[rw.ContentPart] = []
    run_path = ""
    for j, block in enumerate(content):
        where = f"{path}.content[{j}]"
        if isinstance(block, TextBlock | ImageBlock | DocumentBlock):
            if not run:
                run_path = where
            run.append(_part(block))
            continue
        if run:
            yield rw.Message(role="user", content=run), run_path
            run = []
        if not isinstance(block, ToolResultBlock):
            raise _wrong_role(block, "a user", where)
        result = block.content
        output: str | list[rw.ContentPart] = (
            result if isinstance(result, str) else [_part(b) for b in result or []]
        )
        yield rw.FunctionCallOutput(call_id=block.tool_use_id, output=output), where
    if run:
        yield rw.Message(role="user", content=run), run_path


def _assistant_blocks(content: list[ContentBlock], path: str) -> Iterator[tuple[rw.InputItem, str]]:
    for j, block in enumerate(content):
        where = f"{path}.content[{j}]"
        if isinstance(block, ThinkingBlock):
            yield rw.ReasoningItem(encrypted_content=block.signature), where
        elif isinstance(block, RedactedThinkingBlock):
            yield rw.ReasoningItem(encrypted_content=block.data), where
        elif isinstance(block, TextBlock):
            yield rw.Message(role="assistant", content=[rw.OutputText(text=block.text)]), where
        elif isinstance(block, ToolUseBlock):
            arguments = json.dumps(block.input, ensure_ascii=False)
            yield rw.FunctionCall(call_id=block.id, name=block.name, arguments=arguments), where
        else:
            raise _wrong_role(block, "an assistant", where)


# --- tools ---------------------------------------------------------------------------------


def _tools(request: CountTokensRequest, options: NormalizeOptions) -> Iterator[tuple[ToolSpec, str]]:
    for i, tool in enumerate(request.tools or []):
        where = f"tools[{i}]"
        if tool.type not in (None, "custom"):
            if tool.type.startswith("web_search") and options.web_search == "drop":
                continue
            raise RequestError(
                f"Tool {where} is the server tool '{tool.type}', which this server cannot run; offer it "
                "as a client tool with an input_schema, or remove it.",
                param=f"{where}.type",
                code="unsupported_tool",
            )
        if tool.input_schema is None:
            raise RequestError(
                f"Missing required parameter: '{where}.input_schema'.", param=f"{where}.input_schema"
            )
        spec = rw.FunctionTool(name=tool.name, description=tool.description, parameters=tool.input_schema)
        yield function_tool_spec(spec), where


def _tool_choice(
    request: CountTokensRequest, tools: tuple[ToolSpec, ...]
) -> tuple[ToolChoiceValue, tuple[ToolSpec, ...], bool]:
    choice = request.tool_choice
    if choice is None:
        return "auto", tools, True
    parallel = not getattr(choice, "disable_parallel_tool_use", False)
    wire: rw.ToolChoice
    if isinstance(choice, ToolChoiceAuto):
        wire = "auto"
    elif isinstance(choice, ToolChoiceAny):
        if not tools:
            raise RequestError("tool_choice is 'any' but no tools are offered.", param="tool_choice")
        wire = "required"
    elif isinstance(choice, ToolChoiceNone):
        wire = "none"
    else:
        assert isinstance(choice, ToolChoiceTool)
        wire = rw.ToolChoiceFunction(name=choice.name)
    value, offered = resolve_tool_choice(wire, tools)
    return value, offered, parallel
