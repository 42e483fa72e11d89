"""``POST /v1/responses/input_tokens`` and ``POST /v1/responses/compact`` (SPEC S5).

Both read a would-be request exactly as ``POST /v1/responses`` would, history included.
Compaction asks the engine itself for a summary of that conversation and hands it back
sealed, as a ``compaction`` item: the request normaliser unseals such an item into a
user turn carrying the summary, so replaying the compacted output reproduces the context
in far fewer tokens, and a value that this server did not seal is never trusted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import msgspec

from accord.adapters.http.context import Context
from accord.adapters.http.exchange import Exchange
from accord.adapters.http.framing import failure_status
from accord.adapters.requests import ChatMessage, ResponsesRequest, TextPart
from accord.adapters.runner import Collected
from accord.adapters.service import Prepared
from accord.errors import RequestError
from accord.events.items import MessageItem, OutputText

#: The turn appended to the conversation to ask the model for its summary.
COMPACT_INSTRUCTION = (
    "Summarize the conversation so far so that it can be continued from your summary alone: "
    "the user's goals and constraints, decisions made, facts and tool results that still matter, "
    "and the work that remains. Write only the summary."
)
#: How the summary reads when it is replayed as a turn of the conversation.
SUMMARY_PREFIX = "Summary of the conversation so far:\n\n"


async def input_tokens(ctx: Context, ex: Exchange) -> None:
    request = await ctx.read_request(ex)
    service = ctx.service
    conversation, _ = await service.conversation(request)
    count = await service.engine.count_tokens(service.renderer.render(conversation))
    await ex.json(200, {"object": "response.input_tokens", "input_tokens": count})


def _user_messages(items: list[dict[str, Any]], new_id: Callable[[str], str]) -> list[dict[str, Any]]:
    """The user turns as full ``message`` items (type, id, status, content parts), as the
    Open Responses item schema requires of a compacted output."""
    out: list[dict[str, Any]] = []
    for item in items:
        if item.get("type", "message") != "message" or item.get("role") != "user":
            continue
        content = item.get("content")
        given = item.get("id")
        out.append(
            {
                "type": "message",
                "id": given if isinstance(given, str) and given else new_id("msg"),
                "status": item.get("status") or "completed",
                "role": "user",
                "content": [{"type": "input_text", "text": content}] if isinstance(content, str) else content,
            }
        )
    return out


async def compact(ctx: Context, ex: Exchange) -> None:
    request = await ctx.read_request(ex)
    ticket = await ctx.admit()
    try:
        await _compact(ctx, ex, request)
    finally:
        if ticket is not None:
            ticket.release()


async def _compact(ctx: Context, ex: Exchange, request: ResponsesRequest) -> None:
    if not request.model:
        raise RequestError("model is required to compact a conversation", param="model")
    service = ctx.service
    if service.sealer is None:
        raise RequestError("compaction needs a sealing key, and this server has none", status=501)
    conversation, history = await service.conversation(request)
    ask = ChatMessage(role="user", content=(TextPart(text=COMPACT_INSTRUCTION),))
    summarising = msgspec.structs.replace(
        conversation,
        messages=(*conversation.messages, ask),
        tools=(),
        tool_choice="none",
        text_format=None,
        last_input=COMPACT_INSTRUCTION,
        last_item_type="message",
    )
    prepared = Prepared(
        request=request, conversation=summarising, run=service.build_run(request, summarising)
    )
    # The summary run is not a response of its own: nothing is stored or traced for it.
    outcome = await ctx.drive(ex, prepared, Collected(), route="compact", persist=False, trace=False)
    if ex.disconnected:
        return
    snapshot = outcome.snapshot
    if snapshot.status == "failed" and snapshot.error is not None:
        code = str(snapshot.error["code"])
        status, kind = failure_status(code)
        raise RequestError(str(snapshot.error["message"]), status=status, code=code, type=kind)
    summary = "".join(
        part.text
        for item in snapshot.output()
        if isinstance(item, MessageItem)
        for part in item.content
        if isinstance(part, OutputText)
    ).strip()
    compaction = {
        "type": "compaction",
        "id": service.new_id("cmp"),
        "encrypted_content": service.sealer.seal(SUMMARY_PREFIX + summary),
    }
    await ex.json(
        200,
        {
            "id": service.new_id("resp"),
            "object": "response.compaction",
            "created_at": int(time.time()),
            "output": [*_user_messages([*history, *conversation.input_items], service.new_id), compaction],
            "usage": snapshot.usage,
        },
    )
