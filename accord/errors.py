"""The error tree: whose fault it was decides how it surfaces (STYLE 8).

Every exception class accord defines sits in this tree (a test walks every module and
checks it)::

    AccordError
    ├── RequestError            the client's fault: an HTTP status, the JSON path, a code
    │   ├── NotFound            404: a stored response or route that does not exist
    │   ├── Overloaded          429 (503 while draining) with Retry-After: admission control (adapters/http)
    │   └── TemplateRaised      the chat template refused the conversation (adapters/templates)
    ├── GenerationError         the engine or the model failed (code: engine_error, upstream_error, ...)
    │   ├── NoHealthyUpstream   every upstream of a pool is marked down (raised by engine/upstream)
    │   └── ConstraintError     a schema or tool set the grammar library cannot compile (engine/local)
    ├── UnsupportedModel        a model file the local engine cannot run (engine/local)
    ├── ProtocolViolation       a stage got an event it must never get: a bug, not a case to handle
    │   └── FoldError           an event the Snapshot's state does not allow (events/response)
    ├── ConfigError             the settings cannot produce a working server (reported at start-up)
    │   ├── ScriptError         a scripted engine's rules file is not valid
    │   ├── BindError           the address to listen on is taken or unusable (adapters/http/serve)
    │   └── MissingExtra        a feature needs an optional dependency group that is not installed
    ├── StoreError              the response store failed or refused (adapters/store)
    │   ├── ChainBroken         a ``previous_response_id`` chain reaches a response no longer stored
    │   └── UnknownCursor       an ``after`` cursor names no item of that response
    └── TraceError              a file is not a readable trace (events/trace)

Only the HTTP edge turns these into a status code or an SSE ``error`` event: a
``RequestError`` before the stream opened becomes its status and body; anything raised
inside a run becomes ``error`` + ``response.failed`` (docs/spec.md W6).
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
        #: Extra response headers the edge sends with this error (``Allow``, ``Retry-After``, ...).
        self.headers: tuple[tuple[str, str], ...] = ()


class Overloaded(RequestError):
    """429 (503 while draining): too many requests running and waiting; retry after a while."""

    def __init__(
        self, message: str, *, retry_after: int, status: int = 429, code: str = "server_overloaded"
    ) -> None:
        super().__init__(message, status=status, code=code, type="server_error")
        self.retry_after = retry_after
        self.headers = (("retry-after", str(retry_after)),)


class NotFound(RequestError):
    """404: what the request names does not exist (a stored response, a route)."""

    def __init__(self, message: str, *, param: str | None = None, code: str = "not_found") -> None:
        super().__init__(message, param=param, status=404, code=code)


class GenerationError(AccordError):
    """The engine or the model failed; ``code`` is the SSE/JSON error code (SPEC W6)."""

    code = "engine_error"


class NoHealthyUpstream(GenerationError):
    """Every upstream of a remote engine's pool is down (or excluded).

    Defined here rather than beside the pool so that the HTTP edge can name it without importing
    the HTTP client the remote engine uses, which a server of the embedded engine never needs.
    """


class ProtocolViolation(AccordError):
    """A stage received an event it must never receive: a bug, not a case to handle."""


class ConfigError(AccordError):
    """The settings cannot produce a working server."""


class BindError(ConfigError):
    """The address to listen on is taken or cannot be used."""


class MissingExtra(ConfigError):
    """A feature needs packages of an extra that is not installed; the message names the extra."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        super().__init__(f"{feature} needs {module!r}, which is not installed: pip install 'accord[{extra}]'")
        self.extra = extra
        self.module = module


def require_extra(feature: str, extra: str, module: str) -> None:
    """Raise :class:`MissingExtra` naming ``extra`` unless ``module`` can be imported."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingExtra(feature, extra, module)


class StoreError(AccordError):
    """The response store failed or refused."""


class TraceError(AccordError):
    """The file is not a readable trace."""
