"""The Responses request body as msgspec structs (docs/spec.md A7, A8, A9).

Strategy: every union on the wire is a closed union tagged by ``type``, so msgspec
decodes it in one pass and names the JSON path of whatever is wrong. The two shapes
that arrive without a tag (easy messages, item references) get theirs from the decoder
before conversion (see ``_decode.py``). Unknown fields are ignored everywhere: clients
add fields faster than servers learn them (Codex sends ``client_metadata``).

Item and tool types that this server refuses (hosted tools, computer use, MCP...) are
not modelled here: the decoder names them in a 400 before conversion.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

Status = Literal["in_progress", "completed", "incomplete", "failed", "searching"]


class _Tagged(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of every ``type``-tagged wire struct."""


# --- content parts -------------------------------------------------------------------


class InputText(_Tagged, tag="input_text", frozen=True, kw_only=True):
    text: str


class OutputText(_Tagged, tag="output_text", frozen=True, kw_only=True):
    text: str
    annotations: list[Any] | None = None
    logprobs: list[Any] | None = None


class Refusal(_Tagged, tag="refusal", frozen=True, kw_only=True):
    refusal: str


class InputImage(_Tagged, tag="input_image", frozen=True, kw_only=True):
    image_url: str | None = None
    file_id: str | None = None
    detail: str | None = None


class InputFile(_Tagged, tag="input_file", frozen=True, kw_only=True):
    file_id: str | None = None
    file_url: str | None = None
    file_data: str | None = None
    filename: str | None = None


class InputAudio(_Tagged, tag="input_audio", frozen=True, kw_only=True):
    input_audio: Any = None


class EncryptedContentPart(_Tagged, tag="encrypted_content", frozen=True, kw_only=True):
    """Some agent clients carry readable sub-agent payloads in this part (SPEC I3)."""

    encrypted_content: str


ContentPart = InputText | OutputText | Refusal | InputImage | InputFile | InputAudio | EncryptedContentPart


class SummaryText(_Tagged, tag="summary_text", frozen=True, kw_only=True):
    text: str


class ReasoningText(_Tagged, tag="reasoning_text", frozen=True, kw_only=True):
    text: str


# --- tools ---------------------------------------------------------------------------


class FunctionTool(_Tagged, tag="function", frozen=True, kw_only=True):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class TextGrammarFormat(_Tagged, tag="text", frozen=True, kw_only=True):
    pass


class GrammarFormat(_Tagged, tag="grammar", frozen=True, kw_only=True):
    syntax: Literal["lark", "regex"]
    definition: str


class CustomTool(_Tagged, tag="custom", frozen=True, kw_only=True):
    name: str
    description: str | None = None
    format: TextGrammarFormat | GrammarFormat | None = None


class NamespaceTool(_Tagged, tag="namespace", frozen=True, kw_only=True):
    name: str
    description: str | None = None
    tools: list[FunctionTool | CustomTool]


class ToolSearchTool(_Tagged, tag="tool_search", frozen=True, kw_only=True):
    description: str | None = None
    execution: Literal["server", "client"] | None = None
    parameters: dict[str, Any] | None = None


class WebSearchTool(_Tagged, tag="web_search", frozen=True, kw_only=True):
    external_web_access: bool | None = None


class WebSearchTool20250826(WebSearchTool, tag="web_search_2025_08_26", frozen=True, kw_only=True):
    pass


class WebSearchPreviewTool(WebSearchTool, tag="web_search_preview", frozen=True, kw_only=True):
    pass


class WebSearchPreviewTool20250311(
    WebSearchTool, tag="web_search_preview_2025_03_11", frozen=True, kw_only=True
):
    pass


Tool = (
    FunctionTool
    | CustomTool
    | NamespaceTool
    | ToolSearchTool
    | WebSearchTool
    | WebSearchTool20250826
    | WebSearchPreviewTool
    | WebSearchPreviewTool20250311
)

#: Tool types the decoder refuses by name: hosted tools this server cannot run.
HOSTED_TOOL_TYPES = frozenset(
    {
        "file_search",
        "computer",
        "computer_use",
        "computer_use_preview",
        "mcp",
        "code_interpreter",
        "programmatic_tool_calling",
        "image_generation",
        "local_shell",
        "shell",
        "apply_patch",
    }
)
TOOL_TYPES = frozenset(
    {
        "function",
        "custom",
        "namespace",
        "tool_search",
        "web_search",
        "web_search_2025_08_26",
        "web_search_preview",
        "web_search_preview_2025_03_11",
    }
)


class ToolChoiceFunction(_Tagged, tag="function", frozen=True, kw_only=True):
    name: str


class ToolChoiceCustom(_Tagged, tag="custom", frozen=True, kw_only=True):
    name: str


class AllowedToolRef(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    name: str | None = None


class ToolChoiceAllowed(_Tagged, tag="allowed_tools", frozen=True, kw_only=True):
    mode: Literal["auto", "required"]
    tools: list[AllowedToolRef]


ToolChoiceMode = Literal["auto", "none", "required"]
ToolChoice = ToolChoiceMode | ToolChoiceFunction | ToolChoiceCustom | ToolChoiceAllowed
TOOL_CHOICE_TYPES = frozenset({"function", "custom", "allowed_tools"})

# --- input items ---------------------------------------------------------------------


class Message(_Tagged, tag="message", frozen=True, kw_only=True):
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[ContentPart]
    id: str | None = None
    status: Status | None = None
    phase: Literal["commentary", "final_answer"] | None = None


class FunctionCall(_Tagged, tag="function_call", frozen=True, kw_only=True):
    call_id: str
    name: str
    arguments: str
    id: str | None = None
    status: Status | None = None
    namespace: str | None = None


ToolOutput = str | list[ContentPart]


class FunctionCallOutput(_Tagged, tag="function_call_output", frozen=True, kw_only=True):
    call_id: str
    output: ToolOutput
    id: str | None = None
    status: Status | None = None


class CustomToolCall(_Tagged, tag="custom_tool_call", frozen=True, kw_only=True):
    call_id: str
    name: str
    input: str
    id: str | None = None
    status: Status | None = None
    namespace: str | None = None


class CustomToolCallOutput(_Tagged, tag="custom_tool_call_output", frozen=True, kw_only=True):
    call_id: str
    output: ToolOutput
    id: str | None = None
    status: Status | None = None


class ReasoningItem(_Tagged, tag="reasoning", frozen=True, kw_only=True):
    id: str | None = None
    summary: list[SummaryText] | None = None
    content: list[ReasoningText] | None = None
    encrypted_content: str | None = None
    status: Status | None = None


class ItemReference(_Tagged, tag="item_reference", frozen=True, kw_only=True):
    id: str


class Compaction(_Tagged, tag="compaction", frozen=True, kw_only=True):
    encrypted_content: str
    id: str | None = None
    created_by: str | None = None


class CompactionTrigger(_Tagged, tag="compaction_trigger", frozen=True, kw_only=True):
    id: str | None = None


class AdditionalTools(_Tagged, tag="additional_tools", frozen=True, kw_only=True):
    tools: list[Tool]
    role: Literal["developer"] = "developer"
    id: str | None = None


class ToolSearchCall(_Tagged, tag="tool_search_call", frozen=True, kw_only=True):
    arguments: Any = None
    call_id: str | None = None
    id: str | None = None
    execution: Literal["server", "client"] | None = None
    status: Status | None = None


class ToolSearchOutput(_Tagged, tag="tool_search_output", frozen=True, kw_only=True):
    tools: list[Tool]
    call_id: str | None = None
    id: str | None = None
    execution: Literal["server", "client"] | None = None
    status: Status | None = None


class WebSearchCall(_Tagged, tag="web_search_call", frozen=True, kw_only=True):
    """History from a server that could search; its findings are already in the answer text."""

    id: str | None = None
    status: Status | None = None
    action: Any = None


InputItem = (
    Message
    | FunctionCall
    | FunctionCallOutput
    | CustomToolCall
    | CustomToolCallOutput
    | ReasoningItem
    | ItemReference
    | Compaction
    | CompactionTrigger
    | AdditionalTools
    | ToolSearchCall
    | ToolSearchOutput
    | WebSearchCall
)
ITEM_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "reasoning",
        "item_reference",
        "compaction",
        "compaction_trigger",
        "additional_tools",
        "tool_search_call",
        "tool_search_output",
        "web_search_call",
    }
)
#: Item types of the SDK union refused by name (they belong to hosted tools).
REFUSED_ITEM_TYPES = frozenset(
    {
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "configuration_update",
        "image_generation_call",
        "code_interpreter_call",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
        "program",
        "program_output",
    }
)

# --- the request ---------------------------------------------------------------------


class ReasoningConfig(msgspec.Struct, frozen=True, kw_only=True):
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None
    generate_summary: Literal["auto", "concise", "detailed"] | None = None
    context: str | None = None
    mode: str | None = None


class FormatText(_Tagged, tag="text", frozen=True, kw_only=True):
    pass


class FormatJsonObject(_Tagged, tag="json_object", frozen=True, kw_only=True):
    pass


SchemaName = Annotated[str, msgspec.Meta(pattern=r"^[a-zA-Z0-9_-]{1,64}$")]


class FormatJsonSchema(_Tagged, tag="json_schema", frozen=True, kw_only=True):
    """``schema`` sits flat in ``format`` under that exact key, both ways (SPEC I10)."""

    name: SchemaName
    schema: dict[str, Any]
    strict: bool | None = None
    description: str | None = None


class TextConfig(msgspec.Struct, frozen=True, kw_only=True):
    format: FormatText | FormatJsonObject | FormatJsonSchema | None = None
    verbosity: Literal["low", "medium", "high"] | None = None


MetadataKey = Annotated[str, msgspec.Meta(max_length=64)]
MetadataValue = Annotated[str, msgspec.Meta(max_length=512)]
#: The values the Responses API documents for ``include``; anything else is a client's typo.
Include = Literal[
    "code_interpreter_call.outputs",
    "computer_call_output.output.image_url",
    "file_search_call.results",
    "message.input_image.image_url",
    "message.output_text.logprobs",
    "reasoning.encrypted_content",
    "web_search_call.action.sources",
    "web_search_call.results",
]


class ResponsesRequest(msgspec.Struct, frozen=True, kw_only=True):
    """The whole ``POST /v1/responses`` body; every field optional as in the SDK's TypedDict."""

    model: str | None = None
    input: str | list[InputItem] | None = None
    instructions: str | None = None
    stream: bool | None = None
    stream_options: dict[str, Any] | None = None
    previous_response_id: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    conversation: str | dict[str, Any] | None = None
    store: bool | None = None
    background: bool | None = None
    background_options: dict[str, Any] | None = None
    include: list[Include] | None = None
    max_output_tokens: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)] | None = None
    max_tool_calls: Annotated[int, msgspec.Meta(ge=0)] | None = None
    parallel_tool_calls: bool | None = None
    metadata: Annotated[dict[MetadataKey, MetadataValue], msgspec.Meta(max_length=16)] | None = None
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] | None = None
    top_p: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    top_logprobs: Annotated[int, msgspec.Meta(ge=0, le=20)] | None = None
    truncation: Literal["auto", "disabled"] | None = None
    reasoning: ReasoningConfig | None = None
    text: TextConfig | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    prompt: dict[str, Any] | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: str | None = None
    safety_identifier: str | None = None
    service_tier: str | None = None
    user: str | None = None
    context_management: list[dict[str, Any]] | None = None


def tag_of(value: msgspec.Struct) -> str:
    """The ``type`` a tagged struct carries on the wire (msgspec keeps it off the instance)."""
    return str(value.__struct_config__.tag)
