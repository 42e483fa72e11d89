"""Conversation messages and tools as the dicts chat templates read.

The dicts follow the Hugging Face chat convention (``role``, ``content``, ``tool_calls``
with ``function.name``/``function.arguments``, ``tool_call_id``, ``reasoning_content``)
and tools the Chat shape ``{"type": "function", "function": ...}``, because that is what
templates were written against (docs/model-formats.md B14 #10).

Some templates (SmolLM2's ChatML among them) render neither the tools nor the calls they
are given. For those the Hermes convention is written into the messages themselves
(tool list in the system message, ``<tool_call>`` JSON in the assistant text,
``<tool_response>`` in a user turn): the format the ChatML profile's parser reads.
"""

from __future__ import annotations

import json
from typing import Any

from accord.adapters.requests import ChatMessage, TextPart
from accord.pipeline.segments import ToolSpec

from ._jinja import arguments_value


def tool_dicts(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """Tools in the Chat Completions shape templates expect."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool.name}
        if tool.description:
            function["description"] = tool.description
        function["parameters"] = tool.parameters or {"type": "object", "properties": {}}
        out.append({"type": "function", "function": function})
    return out


def message_dict(
    message: ChatMessage,
    *,
    developer_as_system: bool = False,
    call_content: str | None = "",
    vision: bool = True,
) -> dict[str, Any]:
    """One message for a template; ``call_content`` is the content of a turn that only calls."""
    role = "system" if message.role == "developer" and developer_as_system else message.role
    content: Any = message.text
    if vision and message.has_images:
        content = [
            {"type": "text", "text": p.text}
            if isinstance(p, TextPart)
            else {"type": "image", "image": p.url, "image_url": p.url, "file_id": p.file_id}
            for p in message.content
        ]
    elif message.tool_calls and not content:
        content = call_content
    data: dict[str, Any] = {"role": role, "content": content}
    if message.tool_calls:
        data["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments_value(call.arguments)},
            }
            for call in message.tool_calls
        ]
    if message.role == "tool":
        data["tool_call_id"] = message.tool_call_id
        if message.name is not None:
            data["name"] = message.name
    if message.reasoning is not None:
        data["reasoning_content"] = message.reasoning
        data["thinking"] = message.reasoning
    return data


HERMES_TOOLS_PREAMBLE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
HERMES_TOOLS_INSTRUCTION = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def hermes_tools_text(tools: tuple[ToolSpec, ...], *, call_format: bool = True) -> str:
    """The tool list; with ``call_format`` also how to write a call (Hermes ``<tool_call>`` JSON).

    Without it the list stands alone: a template that renders calls in the model's own
    markup shows the model that markup, which a Hermes instruction would contradict.
    """
    listing = "".join("\n" + json.dumps(t, ensure_ascii=False) for t in tool_dicts(tools))
    return HERMES_TOOLS_PREAMBLE + listing + (HERMES_TOOLS_INSTRUCTION if call_format else "\n</tools>")


def hermes_call_text(dicts: list[dict[str, Any]]) -> str:
    calls = []
    for call in dicts:
        function = call["function"]
        payload = {"name": function["name"], "arguments": function["arguments"]}
        calls.append("<tool_call>\n" + json.dumps(payload, ensure_ascii=False) + "\n</tool_call>")
    return "\n".join(calls)


def with_tools_in_system(
    messages: list[dict[str, Any]], tools: tuple[ToolSpec, ...], *, call_format: bool
) -> list[dict[str, Any]]:
    """The tool list written into the (first) system message, for templates that ignore ``tools``."""
    text = hermes_tools_text(tools, call_format=call_format)
    if messages and messages[0]["role"] == "system" and isinstance(messages[0]["content"], str):
        first = dict(messages[0], content=messages[0]["content"] + "\n\n" + text)
        return [first, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def with_calls_in_text(messages: list[dict[str, Any]], *, results: bool) -> list[dict[str, Any]]:
    """Calls (and, when ``results``, tool results) as Hermes text, for templates that drop them."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.get("tool_calls"):
            content = message["content"] or ""
            calls = hermes_call_text(message["tool_calls"])
            message = {k: v for k, v in message.items() if k != "tool_calls"}
            message["content"] = f"{content}\n{calls}" if content else calls
        elif results and message["role"] == "tool":
            text = f"<tool_response>\n{message['content']}\n</tool_response>"
            if out and out[-1].get("_tool_responses"):
                out[-1]["content"] += "\n" + text
                continue
            message = {"role": "user", "content": text, "_tool_responses": True}
        out.append(message)
    for message in out:
        message.pop("_tool_responses", None)
    return out


def with_text_apart_from_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turns with text and calls as two turns, for templates that render calls only without text.

    DeepSeek-V3's template renders a turn's calls only when its content is None, so a turn
    that said something and then called would lose its calls, and its results their call.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.get("tool_calls") and message["content"]:
            out.append({k: v for k, v in message.items() if k != "tool_calls"})
            calls = {k: v for k, v in message.items() if k not in ("reasoning_content", "thinking")}
            out.append({**calls, "content": None})
        else:
            out.append(message)
    return out
