"""A decoded request (+ earlier items) -> :class:`Conversation` (SPEC I1-I10).

Theory of operation: items are read in order by one :class:`_Turns` builder. Everything
the assistant side produced between two other items (reasoning, assistant text, function,
custom and tool_search calls) is one assistant turn, so the template binds each later
result to its call by id (SPEC I8). User, system and developer messages and tool results
close the open turn. Every refusal is a :class:`RequestError` naming the JSON path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import msgspec
import structlog

from accord.errors import RequestError
from accord.pipeline.segments import ToolSpec

from ._conversation import PART_SEPARATOR, ChatMessage, Conversation, Part, TextPart, ToolCallRef
from ._decode import _tag_item, _validation_error
from ._parts import content_text, translate_content
from ._tools import WebSearchPolicy, flatten_tools, resolve_tool_choice, unique_tools
from ._wire import (
    AdditionalTools,
    Compaction,
    CompactionTrigger,
    CustomToolCall,
    CustomToolCallOutput,
    FunctionCall,
    FunctionCallOutput,
    InputItem,
    ItemReference,
    Message,
    ReasoningItem,
    ResponsesRequest,
    ToolSearchCall,
    ToolSearchOutput,
    WebSearchCall,
    tag_of,
)
from .sealing import Sealer

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, kw_only=True)
class NormalizeOptions:
    #: What to do with a ``web_search`` tool that asks for external access (SPEC I7).
    web_search: WebSearchPolicy = "refuse"
    #: Whether the model sees images; otherwise they become placeholders (SPEC I9).
    vision: bool = False
    #: Reads our own ``encrypted_content`` back (SPEC I4); None: no sealed values are read.
    sealer: Sealer | None = None
    #: ``item_reference`` ids resolved by the caller (from the store) to the items' JSON.
    references: Mapping[str, dict[str, Any]] = field(default_factory=dict)


def referenced_ids(req: ResponsesRequest) -> list[str]:
    """The ids of the request's ``item_reference`` items, for the caller to resolve."""
    if not isinstance(req.input, list):
        return []
    return [item.id for item in req.input if isinstance(item, ItemReference)]


def convert_item(raw: Any, path: str) -> InputItem:
    """A JSON item (stored or referenced) as a typed item, or a 400 naming ``path``."""
    if not isinstance(raw, dict):
        raise RequestError(f"Item {path} is not a JSON object.", param=path)
    raw = dict(raw)
    _tag_item(raw, path)
    try:
        return cast(InputItem, msgspec.convert(raw, InputItem))
    except msgspec.ValidationError as exc:
        err = _validation_error(exc)
        raise RequestError(f"Item {path} is not a valid input item: {err.message}", param=path) from None


def _request_items(req: ResponsesRequest, options: NormalizeOptions) -> list[tuple[InputItem, str]]:
    if req.input is None:
        return []
    if isinstance(req.input, str):
        return [(Message(role="user", content=req.input), "input")]
    items: list[tuple[InputItem, str]] = []
    for i, item in enumerate(req.input):
        path = f"input[{i}]"
        if isinstance(item, ItemReference):
            resolved = options.references.get(item.id)
            if resolved is None:
                raise RequestError(
                    f"Input item {path} references '{item.id}', which this server does not know.",
                    param=f"{path}.id",
                    code="item_not_found",
                )
            item = convert_item(resolved, path)
            if isinstance(item, ItemReference):
                raise RequestError(f"Input item {path} resolves to another reference.", param=path)
        items.append((item, path))
    return items


def normalize(
    req: ResponsesRequest, *, history: Sequence[dict[str, Any]] = (), options: NormalizeOptions
) -> Conversation:
    """Normalise one request into what templates render and the pipeline reads."""
    if req.prompt is not None:
        raise RequestError(
            "Stored prompt templates ('prompt') are not supported by this server.", param="prompt"
        )
    if req.conversation is not None and req.previous_response_id is not None:
        raise RequestError(
            "'previous_response_id' cannot be combined with 'conversation'.", param="previous_response_id"
        )
    try:
        past = [(convert_item(raw, f"history[{i}]"), "previous_response_id") for i, raw in enumerate(history)]
    except RequestError as exc:
        raise RequestError(
            f"The previous response's stored items could not be read: {exc.message}",
            param="previous_response_id",
        ) from None
    own = _request_items(req, options)

    flat = flatten_tools(req.tools or [], path="tools", web_search=options.web_search)
    for item, path in [*past, *own]:
        if isinstance(item, AdditionalTools | ToolSearchOutput):
            flat.extend(flatten_tools(item.tools, path=f"{path}.tools", web_search=options.web_search))
    tool_choice, tools = resolve_tool_choice(req.tool_choice, unique_tools(flat))

    turns = _Turns(options)
    if req.instructions:
        turns.add_message("system", (TextPart(text=req.instructions),))
    for item, path in [*past, *own]:
        turns.add(item, path)
    messages = turns.finish()
    if not messages:
        raise RequestError("The request has no input.", param="input")

    own_items = [item for item, _ in own if not isinstance(item, AdditionalTools)]
    last = own_items[-1] if own_items else None
    effort = req.reasoning.effort if req.reasoning else None
    text_format = req.text.format if req.text else None
    return Conversation(
        messages=tuple(messages),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=True if req.parallel_tool_calls is None else req.parallel_tool_calls,
        thinking=None if effort is None else effort != "none",
        max_output_tokens=req.max_output_tokens,
        temperature=req.temperature,
        top_p=req.top_p,
        input_items=[explicit_item(item) for item in own_items],
        last_input=_item_text(last, options) if last is not None else "",
        last_item_type=tag_of(last) if last is not None else "",
        include_encrypted_reasoning="reasoning.encrypted_content" in (req.include or []),
        prompt_cache_key=req.prompt_cache_key,
        text_format=msgspec.to_builtins(text_format)
        if text_format is not None and tag_of(text_format) != "text"
        else None,
    )


def explicit_item(item: InputItem) -> dict[str, Any]:
    """An item as an explicit typed Responses item: string content becomes one typed part."""
    data: dict[str, Any] = msgspec.to_builtins(item)
    data = {k: v for k, v in data.items() if v is not None}
    if isinstance(item, Message) and isinstance(item.content, str):
        kind = "output_text" if item.role == "assistant" else "input_text"
        part: dict[str, Any] = {"type": kind, "text": item.content}
        if kind == "output_text":
            part["annotations"] = []
        data["content"] = [part]
    return data


def reasoning_text(item: ReasoningItem, sealer: Sealer | None) -> str:
    """Readable reasoning: content, else our own sealed text, else the summary (SPEC I3, I4).

    Our sealed text is the exact reasoning, the summary only a digest of it, so the exact
    text wins when both are there.
    """
    if item.content:
        return "".join(part.text for part in item.content)
    if item.encrypted_content and sealer is not None:
        if item.summary:
            unsealed = sealer.try_unseal(item.encrypted_content)
        else:
            unsealed = sealer.unseal(item.encrypted_content)
        if unsealed is not None:
            return unsealed
    if item.summary:
        return PART_SEPARATOR.join(part.text for part in item.summary)
    return ""


def _item_text(item: InputItem, options: NormalizeOptions) -> str:
    if isinstance(item, Message):
        return content_text(item.content)
    if isinstance(item, FunctionCallOutput | CustomToolCallOutput):
        return content_text(item.output)
    if isinstance(item, FunctionCall):
        return item.arguments
    if isinstance(item, CustomToolCall):
        return item.input
    if isinstance(item, ReasoningItem):
        return reasoning_text(item, options.sealer)
    return ""


def _qualified(name: str, namespace: str | None) -> str:
    if namespace and not name.startswith(namespace + "."):
        return f"{namespace}.{name}"
    return name


class _Turns:
    """Builds the chat messages; folds consecutive assistant-side items into one turn."""

    def __init__(self, options: NormalizeOptions) -> None:
        self._options = options
        self._messages: list[ChatMessage] = []
        self._reasoning: list[str] = []
        self._content: list[Part] = []
        self._calls: list[ToolCallRef] = []
        self._call_names: dict[str, str] = {}

    def add_message(self, role: Any, content: tuple[Part, ...], **extra: Any) -> None:
        self._close_turn()
        self._messages.append(ChatMessage(role=role, content=content, **extra))

    def _close_turn(self) -> None:
        if self._reasoning or self._content or self._calls:
            self._messages.append(
                ChatMessage(
                    role="assistant",
                    content=tuple(self._content),
                    tool_calls=tuple(self._calls),
                    reasoning=PART_SEPARATOR.join(self._reasoning) if self._reasoning else None,
                )
            )
        self._reasoning, self._content, self._calls = [], [], []

    def _call(self, call_id: str, name: str, arguments: str, kind: Any) -> None:
        self._calls.append(ToolCallRef(id=call_id, name=name, arguments=arguments, kind=kind))
        self._call_names[call_id] = name

    def finish(self) -> list[ChatMessage]:
        self._close_turn()
        return self._messages

    def add(self, item: InputItem, path: str) -> None:
        vision = self._options.vision
        if isinstance(item, Message):
            if item.content == "" or item.content == []:
                # An empty message's text lives nowhere else: the client lost something.
                raise RequestError(f"Message {path} has no content.", param=f"{path}.content")
            parts = translate_content(item.content, vision=vision)
            if not parts:
                _log.warning("message_skipped", reason="only opaque encrypted content", item=path)
            elif item.role == "assistant":
                self._content.extend(parts)
            else:
                self.add_message(item.role, parts)
        elif isinstance(item, FunctionCall):
            self._call(item.call_id, _qualified(item.name, item.namespace), item.arguments, "function")
        elif isinstance(item, CustomToolCall):
            arguments = json.dumps({"input": item.input}, ensure_ascii=False)
            self._call(item.call_id, _qualified(item.name, item.namespace), arguments, "custom")
        elif isinstance(item, ToolSearchCall):
            call_id = item.call_id or item.id or f"tool_search_{len(self._call_names)}"
            args = item.arguments if isinstance(item.arguments, str) else json.dumps(item.arguments or {})
            self._call(call_id, "tool_search", args, "function")
        elif isinstance(item, FunctionCallOutput | CustomToolCallOutput):
            self.add_message(
                "tool",
                translate_content(item.output, vision=vision),
                tool_call_id=item.call_id,
                name=self._call_names.get(item.call_id),
            )
        elif isinstance(item, ToolSearchOutput):
            listing = [_describe_tool(t) for t in flatten_tools(item.tools, path=path, web_search="drop")]
            text = "Tools now available:\n" + "\n".join(listing) if listing else "No matching tools."
            answered = item.call_id or item.id
            self.add_message(
                "tool",
                (TextPart(text=text),),
                tool_call_id=answered,
                name=self._call_names.get(answered or "", "tool_search"),
            )
        elif isinstance(item, ReasoningItem):
            text = reasoning_text(item, self._options.sealer)
            if text:
                self._reasoning.append(text)
        elif isinstance(item, Compaction):
            self._compaction(item, path)
        elif isinstance(item, AdditionalTools | CompactionTrigger | WebSearchCall):
            pass  # tools were hoisted; triggers and foreign search records carry no text

    def _compaction(self, item: Compaction, path: str) -> None:
        sealer = self._options.sealer
        summary = sealer.unseal(item.encrypted_content) if sealer is not None else None
        if summary is None:
            _log.warning("compaction_skipped", reason="not sealed by this server", item=path)
            return
        self.add_message("user", (TextPart(text=summary),))


def _describe_tool(entry: tuple[ToolSpec, str]) -> str:
    spec = entry[0]
    return f"- {spec.name}: {spec.description}" if spec.description else f"- {spec.name}"
