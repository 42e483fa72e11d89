"""The Responses request model and its normalisation into a :class:`Conversation`.

``decode_request`` turns bytes into a :class:`ResponsesRequest` (or a 400 naming the JSON
path); ``normalize`` turns that, plus earlier items, into the chat a template renders.
"""

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
from ._normalize import NormalizeOptions, normalize, referenced_ids
from ._parts import IMAGE_PLACEHOLDER
from ._tools import WEB_SEARCH_REFUSAL
from ._wire import ResponsesRequest
from .sealing import Sealer

__all__ = [
    "IMAGE_PLACEHOLDER",
    "PART_SEPARATOR",
    "WEB_SEARCH_REFUSAL",
    "ChatMessage",
    "Conversation",
    "ImagePart",
    "NormalizeOptions",
    "Part",
    "RequestLimits",
    "ResponsesRequest",
    "Sealer",
    "TextPart",
    "ToolCallRef",
    "decode_request",
    "normalize",
    "referenced_ids",
    "response_echo",
]
