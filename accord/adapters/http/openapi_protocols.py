"""The Chat Completions and Messages operations of ``/openapi.json``, from their own models.

The request schemas are the request structs the routes decode with; the streamed events are
the projections' event types; the whole bodies are described field by field as
:func:`~accord.events.chat_wire.chat_completion` and
:func:`~accord.events.messages_wire.message_body` render them.
"""

from __future__ import annotations

from typing import Any

from accord.adapters.http.operations import event_stream
from accord.adapters.requests import ChatCompletionsRequest, CountTokensRequest, MessagesRequest
from accord.events.chat_wire import ChatChunk, ChatError
from accord.events.messages_wire import AnyMessagesEvent

_REF = "#/components/schemas/{name}"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF.format(name=name)}


_CHAT_COMPLETION = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "chat.completion"},
        "created": {"type": "integer"},
        "model": {"type": "string"},
        "choices": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "message": {
                        "type": "object",
                        "properties": {
                            "role": {"const": "assistant"},
                            "content": {"type": ["string", "null"]},
                            "refusal": {"type": ["string", "null"]},
                            "reasoning_content": {"type": "string"},
                            "tool_calls": {"type": "array", "items": {"type": "object"}},
                        },
                        "required": ["role", "content"],
                    },
                    "finish_reason": {"enum": ["stop", "length", "tool_calls"]},
                },
                "required": ["index", "message", "finish_reason"],
            },
        },
        "usage": {"type": ["object", "null"]},
    },
    "required": ["id", "object", "created", "model", "choices"],
}
_MESSAGE = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "type": {"const": "message"},
        "role": {"const": "assistant"},
        "model": {"type": "string"},
        "content": {"type": "array", "items": {"type": "object"}},
        "stop_reason": {"enum": ["end_turn", "max_tokens", "tool_use", "stop_sequence", None]},
        "stop_sequence": {"type": ["string", "null"]},
        "usage": {
            "type": "object",
            "properties": {
                name: {"type": "integer"}
                for name in (
                    "input_tokens",
                    "output_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                )
            },
        },
    },
    "required": ["id", "type", "role", "model", "content", "stop_reason", "usage"],
}
_ANTHROPIC_ERROR = {
    "type": "object",
    "properties": {
        "type": {"const": "error"},
        "error": {
            "type": "object",
            "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
            "required": ["type", "message"],
        },
    },
    "required": ["type", "error"],
}


def _errors(schema: str) -> dict[str, Any]:
    return {
        str(code): {"description": text, "content": {"application/json": {"schema": _ref(schema)}}}
        for code, text in (
            (400, "invalid request, or a prompt longer than the context"),
            (401, "bad API key"),
            (413, "body too large"),
        )
    }


def _operation(name: str, request: Any, ok: dict[str, Any], error: str) -> dict[str, Any]:
    return {
        "post": {
            "operationId": name,
            "requestBody": {"required": True, "content": {"application/json": {"schema": request}}},
            "responses": {"200": ok, **_errors(error)},
        }
    }


#: The types whose schemas the operations use, in the order :func:`protocol_paths` takes them.
#: They go into the one ``schema_components`` call of the document, so that types of the same
#: name in two protocols (``FunctionTool``) get distinct component names.
PROTOCOL_TYPES: tuple[Any, ...] = (
    ChatCompletionsRequest,
    MessagesRequest,
    CountTokensRequest,
    ChatChunk,
    ChatError,
    AnyMessagesEvent,
)


def protocol_paths(components: dict[str, Any], schemas: list[Any]) -> dict[str, Any]:
    """The three operations, given the schemas of :data:`PROTOCOL_TYPES`; adds the bodies to ``components``."""
    chat, messages, count, chunk, chat_error, event = schemas
    components["ChatCompletion"] = _CHAT_COMPLETION
    components["Message"] = _MESSAGE
    components["AnthropicError"] = _ANTHROPIC_ERROR
    return {
        "/v1/chat/completions": _operation(
            "createChatCompletion",
            chat,
            {
                "description": "The completion (JSON), or its chunks (SSE, ending with [DONE]) when stream is true",
                "content": {
                    "application/json": {"schema": _ref("ChatCompletion")},
                    "text/event-stream": event_stream({"anyOf": [chunk, chat_error]}, sentinel="[DONE]"),
                },
            },
            "Error",
        ),
        "/v1/messages": _operation(
            "createMessage",
            messages,
            {
                "description": "The message (JSON), or its events (SSE) when stream is true",
                "content": {
                    "application/json": {"schema": _ref("Message")},
                    "text/event-stream": event_stream(event),
                },
            },
            "AnthropicError",
        ),
        "/v1/messages/count_tokens": _operation(
            "countMessageTokens",
            count,
            {
                "description": "The prompt's size in tokens",
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": {"input_tokens": {"type": "integer"}},
                            "required": ["input_tokens"],
                        }
                    }
                },
            },
            "AnthropicError",
        ),
    }
