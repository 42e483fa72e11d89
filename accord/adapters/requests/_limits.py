"""What one request may carry: the count, size and nesting limits (SPEC I12)."""

from __future__ import annotations

from typing import Any

import msgspec


class RequestLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds on what one request may carry (the body size itself is the HTTP layer's)."""

    max_input_items: int = 10_000
    max_tools: int = 512
    max_string_chars: int = 8 * 1024 * 1024
    #: Content parts over the whole request (message content and tool outputs).
    max_content_parts: int = 20_000
    #: The JSON text of one tool's parameters or of ``text.format.schema``.
    max_schema_bytes: int = 256 * 1024
    #: Arrays and objects nested in one another, anywhere in the body.
    max_json_depth: int = 64

    @classmethod
    def from_settings(cls, settings: Any) -> RequestLimits:
        return cls(
            max_input_items=settings.max_input_items,
            max_tools=settings.max_tools,
            max_string_chars=settings.max_string_chars,
            max_content_parts=settings.max_content_parts,
            max_schema_bytes=settings.max_schema_bytes,
            max_json_depth=settings.max_json_depth,
        )
