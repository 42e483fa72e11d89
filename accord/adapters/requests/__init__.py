"""The request models (Responses, Chat Completions, Messages) and their normalisation into a
:class:`Conversation`.

``decode_request`` turns bytes into a :class:`ResponsesRequest` (or a 400 naming the JSON
path); ``normalize`` turns that, plus earlier items, into the chat a template renders.
"""

from ._chat import decode_chat_request, normalize_chat
from ._chat_wire import ChatCompletionsRequest
from ._conversation import (
    PART_SEPARATOR,
    ChatMessage,
    Conversation,
    ImagePart,
    Part,
    TextPart,
    ToolCallRef,
)
from ._decode import decode_request
from ._echo import response_echo
from ._limits import RequestLimits
from ._messages import decode_count_tokens_request, decode_messages_request, normalize_messages
from ._messages_wire import CountTokensRequest, MessagesRequest
from ._normalize import NormalizeOptions, convert_item, explicit_item, normalize, referenced_ids
from ._parts import IMAGE_PLACEHOLDER
from ._refs import conversation_ref
from ._tools import WEB_SEARCH_REFUSAL
from ._wire import ResponsesRequest
from .sealing import Sealer

__all__ = [
    "IMAGE_PLACEHOLDER",
    "PART_SEPARATOR",
    "WEB_SEARCH_REFUSAL",
    "ChatCompletionsRequest",
    "ChatMessage",
    "Conversation",
    "CountTokensRequest",
    "ImagePart",
    "MessagesRequest",
    "NormalizeOptions",
    "Part",
    "RequestLimits",
    "ResponsesRequest",
    "Sealer",
    "TextPart",
    "ToolCallRef",
    "conversation_ref",
    "convert_item",
    "decode_chat_request",
    "decode_count_tokens_request",
    "decode_messages_request",
    "decode_request",
    "explicit_item",
    "normalize",
    "normalize_chat",
    "normalize_messages",
    "referenced_ids",
    "response_echo",
]
