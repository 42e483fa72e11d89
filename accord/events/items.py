"""Output items and usage as the Responses API puts them on the wire (docs/spec.md A3, A4).

These are the values inside ``output_item.added/done`` and ``Response.output``; the
Snapshot materialises them from its fold state, so each is built in one place.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

ItemStatus = Literal["in_progress", "completed", "incomplete"]


class _Wire(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="type"):
    pass


class OutputText(_Wire, frozen=True, tag="output_text"):
    text: str
    annotations: list[Any]
    logprobs: list[Any]


class Refusal(_Wire, frozen=True, tag="refusal"):
    refusal: str


class ReasoningText(_Wire, frozen=True, tag="reasoning_text"):
    text: str


class SummaryText(_Wire, frozen=True, tag="summary_text"):
    text: str


ContentPart = OutputText | Refusal | ReasoningText


class MessageItem(_Wire, frozen=True, tag="message"):
    id: str
    role: Literal["assistant"]
    status: ItemStatus
    content: list[OutputText | Refusal]
    phase: Literal["commentary", "final_answer"] | None = None


class ReasoningItem(_Wire, frozen=True, tag="reasoning"):
    id: str
    summary: list[SummaryText]
    content: list[ReasoningText]
    status: ItemStatus
    encrypted_content: str | None = None


class FunctionCallItem(_Wire, frozen=True, tag="function_call"):
    id: str
    call_id: str
    name: str
    arguments: str
    status: ItemStatus
    namespace: str | None = None


class CustomToolCallItem(_Wire, frozen=True, tag="custom_tool_call"):
    id: str
    call_id: str
    name: str
    input: str
    status: ItemStatus
    namespace: str | None = None


OutputItem = MessageItem | ReasoningItem | FunctionCallItem | CustomToolCallItem


class InputTokensDetails(msgspec.Struct, frozen=True, kw_only=True):
    cached_tokens: int = 0
    cache_write_tokens: int = 0


class OutputTokensDetails(msgspec.Struct, frozen=True, kw_only=True):
    reasoning_tokens: int = 0


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int

    @classmethod
    def of(cls, *, input_tokens: int, cached_tokens: int, output_tokens: int, reasoning_tokens: int) -> Usage:
        return cls(
            input_tokens=input_tokens,
            input_tokens_details=InputTokensDetails(cached_tokens=cached_tokens),
            output_tokens=output_tokens,
            output_tokens_details=OutputTokensDetails(reasoning_tokens=reasoning_tokens),
            total_tokens=input_tokens + output_tokens,
        )


ZERO_USAGE = Usage.of(input_tokens=0, cached_tokens=0, output_tokens=0, reasoning_tokens=0)
