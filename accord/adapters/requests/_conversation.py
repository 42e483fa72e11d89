"""What a request means once normalised: the chat a template renders, the tools, the options.

A :class:`Conversation` is independent of the wire: roles are chat roles, tool calls sit on
the assistant turn that made them and results name the call they answer by id (SPEC I8),
reasoning is the text of the turn it preceded (SPEC I3). Templates read only this.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from accord.pipeline.segments import ToolSpec

Role = Literal["system", "developer", "user", "assistant", "tool"]


class TextPart(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="text"):
    text: str


class ImagePart(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="image"):
    """An image kept for a vision model (text-only models get a placeholder instead, SPEC I9)."""

    url: str | None = None
    file_id: str | None = None
    detail: str | None = None


Part = TextPart | ImagePart


class ToolCallRef(msgspec.Struct, frozen=True, kw_only=True):
    """One call an assistant turn made: its id, the name as offered, its arguments as JSON text."""

    id: str
    name: str
    arguments: str
    kind: Literal["function", "custom"] = "function"


class ChatMessage(msgspec.Struct, frozen=True, kw_only=True):
    role: Role
    content: tuple[Part, ...] = ()
    #: Calls of an assistant turn, in the order they were made.
    tool_calls: tuple[ToolCallRef, ...] = ()
    #: On ``tool`` messages: the id of the call this result answers, and that call's name.
    tool_call_id: str | None = None
    name: str | None = None
    #: The reasoning that preceded an assistant turn's content and calls.
    reasoning: str | None = None

    @property
    def text(self) -> str:
        """The text parts joined (images count as nothing here)."""
        return PART_SEPARATOR.join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def has_images(self) -> bool:
        return any(isinstance(p, ImagePart) for p in self.content)


#: Several text parts of one message are separate paragraphs.
PART_SEPARATOR = "\n\n"

ToolChoiceValue = Literal["auto", "none", "required"] | str


class Conversation(msgspec.Struct, frozen=True, kw_only=True):
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...] = ()
    #: ``auto``/``none``/``required``, or the name (as offered) of the one tool to call.
    tool_choice: ToolChoiceValue = "auto"
    parallel_tool_calls: bool = True
    #: From ``reasoning.effort``: ``"none"`` -> False, any other effort -> True, absent -> None.
    thinking: bool | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    #: The client's own stop strings (Chat ``stop``, Messages ``stop_sequences``), added to the
    #: model profile's.
    stop: tuple[str, ...] = ()
    #: The request's own input items as explicit typed Responses items (for storing and
    #: ``GET .../input_items``); history items are not repeated here.
    input_items: list[dict[str, Any]] = msgspec.field(default_factory=list)
    #: Text and type of the request's last input item (what scripted engines match on).
    last_input: str = ""
    last_item_type: str = ""
    include_encrypted_reasoning: bool = False
    prompt_cache_key: str | None = None
    #: ``text.format`` when it asks for JSON (``{"type": "json_schema", "schema": ...}``).
    text_format: dict[str, Any] | None = None
