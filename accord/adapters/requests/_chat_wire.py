"""The Chat Completions request body as msgspec structs (openai-python ``types/chat``).

Messages are a closed union tagged by ``role`` and content parts one tagged by ``type``,
so msgspec decodes the body in one pass and names the JSON path of whatever is wrong.
Unknown fields are ignored, as in the Responses model: clients (LiteLLM, LangChain) add
vendor fields freely. The deprecated ``functions``/``function_call`` pair is not modelled;
the decoder refuses a ``function`` role by name.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from ._wire import SchemaName


class _Part(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class TextContent(_Part, tag="text", frozen=True, kw_only=True):
    text: str


class RefusalContent(_Part, tag="refusal", frozen=True, kw_only=True):
    refusal: str


class ImageURL(msgspec.Struct, frozen=True, kw_only=True):
    url: str
    detail: Literal["auto", "low", "high"] | None = None


class ImageContent(_Part, tag="image_url", frozen=True, kw_only=True):
    image_url: ImageURL


class AudioContent(_Part, tag="input_audio", frozen=True, kw_only=True):
    input_audio: Any = None


class FileRef(msgspec.Struct, frozen=True, kw_only=True):
    file_id: str | None = None
    file_data: str | None = None
    filename: str | None = None


class FileContent(_Part, tag="file", frozen=True, kw_only=True):
    file: FileRef


UserPart = TextContent | ImageContent | AudioContent | FileContent
AssistantPart = TextContent | RefusalContent


class _Message(msgspec.Struct, frozen=True, kw_only=True, tag_field="role"):
    pass


class SystemMessage(_Message, tag="system", frozen=True, kw_only=True):
    content: str | list[TextContent]
    name: str | None = None


class DeveloperMessage(_Message, tag="developer", frozen=True, kw_only=True):
    content: str | list[TextContent]
    name: str | None = None


class UserMessage(_Message, tag="user", frozen=True, kw_only=True):
    content: str | list[UserPart]
    name: str | None = None


class CalledFunction(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    arguments: str


class CalledCustom(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    input: str


class _Call(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class FunctionToolCall(_Call, tag="function", frozen=True, kw_only=True):
    id: str
    function: CalledFunction


class CustomToolCall(_Call, tag="custom", frozen=True, kw_only=True):
    id: str
    custom: CalledCustom


class AssistantMessage(_Message, tag="assistant", frozen=True, kw_only=True):
    content: str | list[AssistantPart] | None = None
    refusal: str | None = None
    tool_calls: list[FunctionToolCall | CustomToolCall] | None = None
    #: What vLLM, SGLang and DeepSeek return and some clients hand back with the turn.
    reasoning_content: str | None = None
    reasoning: str | None = None
    name: str | None = None


class ToolMessage(_Message, tag="tool", frozen=True, kw_only=True):
    content: str | list[TextContent]
    tool_call_id: str


ChatMessageParam = SystemMessage | DeveloperMessage | UserMessage | AssistantMessage | ToolMessage
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})

# --- tools ---------------------------------------------------------------------------


class FunctionDefinition(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class _Tool(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class FunctionTool(_Tool, tag="function", frozen=True, kw_only=True):
    function: FunctionDefinition


class GrammarDefinition(msgspec.Struct, frozen=True, kw_only=True):
    definition: str
    syntax: Literal["lark", "regex"]


class _Format(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class TextFormat(_Format, tag="text", frozen=True, kw_only=True):
    pass


class GrammarFormat(_Format, tag="grammar", frozen=True, kw_only=True):
    grammar: GrammarDefinition


class CustomDefinition(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str | None = None
    format: TextFormat | GrammarFormat | None = None


class CustomTool(_Tool, tag="custom", frozen=True, kw_only=True):
    custom: CustomDefinition


ChatTool = FunctionTool | CustomTool


class NamedFunction(msgspec.Struct, frozen=True, kw_only=True):
    name: str


class ChoiceFunction(_Tool, tag="function", frozen=True, kw_only=True):
    function: NamedFunction


class ChoiceCustom(_Tool, tag="custom", frozen=True, kw_only=True):
    custom: NamedFunction


class AllowedTools(msgspec.Struct, frozen=True, kw_only=True):
    mode: Literal["auto", "required"]
    tools: list[dict[str, Any]]


class ChoiceAllowed(_Tool, tag="allowed_tools", frozen=True, kw_only=True):
    allowed_tools: AllowedTools


ChatToolChoice = Literal["auto", "none", "required"] | ChoiceFunction | ChoiceCustom | ChoiceAllowed

# --- response format and the request -----------------------------------------------------


class JsonSchemaSpec(msgspec.Struct, frozen=True, kw_only=True):
    """Nested under ``json_schema`` here; the Responses path has it flat in ``text.format``."""

    name: SchemaName
    schema: dict[str, Any] | None = None
    strict: bool | None = None
    description: str | None = None


class ResponseFormatText(_Format, tag="text", frozen=True, kw_only=True):
    pass


class ResponseFormatJsonObject(_Format, tag="json_object", frozen=True, kw_only=True):
    pass


class ResponseFormatJsonSchema(_Format, tag="json_schema", frozen=True, kw_only=True):
    json_schema: JsonSchemaSpec


class StreamOptions(msgspec.Struct, frozen=True, kw_only=True):
    include_usage: bool | None = None
    include_obfuscation: bool | None = None


Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
Positive = Annotated[int, msgspec.Meta(ge=1)]


class ChatCompletionsRequest(msgspec.Struct, frozen=True, kw_only=True):
    """The whole ``POST /v1/chat/completions`` body."""

    messages: Annotated[list[ChatMessageParam], msgspec.Meta(min_length=1)]
    model: str | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    tools: list[ChatTool] | None = None
    tool_choice: ChatToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormatText | ResponseFormatJsonObject | ResponseFormatJsonSchema | None = None
    max_tokens: Positive | None = None
    max_completion_tokens: Positive | None = None
    stop: str | Annotated[list[str], msgspec.Meta(max_length=4)] | None = None
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] | None = None
    top_p: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    seed: int | None = None
    n: Positive | None = None
    reasoning_effort: Effort | None = None
    #: vLLM's and SGLang's switch (``{"enable_thinking": false}`` for Qwen3-style templates).
    chat_template_kwargs: dict[str, Any] | None = None
    prompt_cache_key: str | None = None
    user: str | None = None
    metadata: dict[str, str] | None = None
