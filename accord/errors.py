"""The error tree: whose fault it was decides how it surfaces (STYLE 8).

Only the HTTP edge turns these into a status code or an SSE ``error`` event.
"""

from __future__ import annotations

MAX_MESSAGE_CHARS = 4000


def cap(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """Cap a client-visible message (SPEC I11: a rejected base64 image must not flood the client)."""
    if len(message) <= limit:
        return message
    return message[: limit - 15] + "… (truncated)"


class AccordError(Exception):
    """Base of every error accord raises on purpose."""


class RequestError(AccordError):
    """The client's fault: carries the HTTP status, the offending JSON path and an error code."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        status: int = 400,
        code: str | None = None,
        type: str = "invalid_request_error",
    ) -> None:
        super().__init__(cap(message))
        self.message = cap(message)
        self.param = param
        self.status = status
        self.code = code
        self.type = type


class NotFound(RequestError):
    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message, param=param, status=404, code="not_found")


class Overloaded(RequestError):
    def __init__(self, message: str, *, status: int = 503) -> None:
        super().__init__(message, status=status, code="overloaded", type="server_error")


class GenerationError(AccordError):
    """The engine or the model failed; ``code`` is the SSE/JSON error code (SPEC W6)."""

    def __init__(self, message: str, *, code: str = "engine_error") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class ProtocolViolation(AccordError):
    """A stage received an event it must never receive: a bug, not a case to handle."""
