"""The Anthropic Messages request body as msgspec structs (anthropic-python ``types/``).

Content blocks are one closed union tagged by ``type``; which blocks a role may carry is
checked by the normaliser, so the 400 says "a tool_result in an assistant turn" rather than
a decoding error. Unknown fields are ignored (``cache_control``, ``citations``,
``context_management``, ``service_tier``...): they change nothing about what the model sees.
Tools are kept loosely typed by ``type`` because server tools (``web_search_20250305``,
``bash_20250124``...) are refused or dropped by name in the normaliser, not by the decoder.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec


class _Tagged(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class Base64Source(_Tagged, tag="base64", frozen=True, kw_only=True):
    media_type: str
    data: str


class URLSource(_Tagged, tag="url", frozen=True, kw_only=True):
    url: str


class FileSource(_Tagged, tag="file", frozen=True, kw_only=True):
    file_id: str


class TextSource(_Tagged, tag="text", frozen=True, kw_only=True):
    media_type: str | None = None
    data: str


class ContentSource(_Tagged, tag="content", frozen=True, kw_only=True):
    content: Any = None


ImageSource = Base64Source | URLSource | FileSource
DocumentSource = Base64Source | URLSource | FileSource | TextSource | ContentSource


class TextBlock(_Tagged, tag="text", frozen=True, kw_only=True):
    text: str


class ImageBlock(_Tagged, tag="image", frozen=True, kw_only=True):
    source: ImageSource


class DocumentBlock(_Tagged, tag="document", frozen=True, kw_only=True):
    source: DocumentSource
    title: str | None = None


class ToolUseBlock(_Tagged, tag="tool_use", frozen=True, kw_only=True):
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(_Tagged, tag="tool_result", frozen=True, kw_only=True):
    tool_use_id: str
    content: str | list[TextBlock | ImageBlock | DocumentBlock] | None = None
    is_error: bool | None = None


class ThinkingBlock(_Tagged, tag="thinking", frozen=True, kw_only=True):
    thinking: str
    signature: str


class RedactedThinkingBlock(_Tagged, tag="redacted_thinking", frozen=True, kw_only=True):
    data: str


ContentBlock = (
    TextBlock
    | ImageBlock
    | DocumentBlock
    | ToolUseBlock
    | ToolResultBlock
    | ThinkingBlock
    | RedactedThinkingBlock
)


class MessageParam(msgspec.Struct, frozen=True, kw_only=True):
    #: ``system`` turns inside ``messages`` come from Claude Code (2.1.x sends its reminders so).
    role: Literal["user", "assistant", "system"]
    content: str | list[ContentBlock]


class Tool(msgspec.Struct, frozen=True, kw_only=True):
    """A client tool (no ``type``, or ``custom``) or a server tool named by its ``type``."""

    name: str
    type: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] | None = None


class ToolChoiceAuto(_Tagged, tag="auto", frozen=True, kw_only=True):
    disable_parallel_tool_use: bool | None = None


class ToolChoiceAny(_Tagged, tag="any", frozen=True, kw_only=True):
    disable_parallel_tool_use: bool | None = None


class ToolChoiceTool(_Tagged, tag="tool", frozen=True, kw_only=True):
    name: str
    disable_parallel_tool_use: bool | None = None


class ToolChoiceNone(_Tagged, tag="none", frozen=True, kw_only=True):
    pass


ToolChoice = ToolChoiceAuto | ToolChoiceAny | ToolChoiceTool | ToolChoiceNone


class ThinkingEnabled(_Tagged, tag="enabled", frozen=True, kw_only=True):
    #: Accepted but not enforced: the splitter cannot end reasoning at a budget.
    budget_tokens: Annotated[int, msgspec.Meta(ge=1)]


class ThinkingDisabled(_Tagged, tag="disabled", frozen=True, kw_only=True):
    pass


class ThinkingAdaptive(_Tagged, tag="adaptive", frozen=True, kw_only=True):
    pass


ThinkingConfig = ThinkingEnabled | ThinkingDisabled | ThinkingAdaptive


class Metadata(msgspec.Struct, frozen=True, kw_only=True):
    user_id: str | None = None


class CountTokensRequest(msgspec.Struct, frozen=True, kw_only=True):
    """``POST /v1/messages/count_tokens``: what shapes the prompt, without the sampling."""

    model: str
    messages: list[MessageParam]
    system: str | list[TextBlock] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: ThinkingConfig | None = None


class MessagesRequest(CountTokensRequest, frozen=True, kw_only=True):
    """The whole ``POST /v1/messages`` body."""

    max_tokens: Annotated[int, msgspec.Meta(ge=1)]
    stop_sequences: list[str] | None = None
    stream: bool | None = None
    temperature: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    top_p: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    top_k: Annotated[int, msgspec.Meta(ge=0)] | None = None
    metadata: Metadata | None = None
