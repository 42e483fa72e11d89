"""The built-in prompt format, used when no chat template is configured (scripted engine, tests).

::

    <|tools|>
    [{"name": ..., "description": ..., "parameters": ...}, ...]
    <|system|>
    text
    <|user|>
    text
    <|assistant|>
    <think>reasoning</think>
    text
    <tool_call>{"id": ..., "name": ..., "arguments": {...}}</tool_call>
    <|tool|> call_id
    result text
    <|assistant|>

Each block ends with a newline; the prompt ends with the open ``<|assistant|>`` line. Roles
are written as they are (``developer`` stays ``developer``); images show as ``[image]``.
"""

from __future__ import annotations

import json

from accord.adapters.requests import PART_SEPARATOR, Conversation, TextPart

from ._jinja import arguments_value, tojson


def render_plain(conv: Conversation) -> str:
    """The built-in format (module docstring): readable, unambiguous, stable for tests."""
    out: list[str] = []
    if conv.tools:
        listing = [
            {"name": t.name, "description": t.description or "", "parameters": t.parameters or {}}
            for t in conv.tools
        ]
        out.append("<|tools|>\n" + tojson(listing) + "\n")
    for message in conv.messages:
        text = PART_SEPARATOR.join(p.text if isinstance(p, TextPart) else "[image]" for p in message.content)
        if message.role == "tool":
            out.append(f"<|tool|> {message.tool_call_id or ''}\n{text}\n")
            continue
        block = [f"<|{message.role}|>\n"]
        if message.reasoning:
            block.append(f"<think>{message.reasoning}</think>\n")
        if text:
            block.append(text + "\n")
        for call in message.tool_calls:
            payload = {"id": call.id, "name": call.name, "arguments": arguments_value(call.arguments)}
            block.append(f"<tool_call>{json.dumps(payload, ensure_ascii=False)}</tool_call>\n")
        out.append("".join(block))
    out.append("<|assistant|>\n")
    return "".join(out)
