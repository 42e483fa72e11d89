"""CORS for ``--allowed-origins`` (the Fetch standard's CORS protocol, as browsers apply it).

A preflight (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``) from an
allowed origin is answered 204 with the allowed method and headers; any other response to
an allowed origin carries ``Access-Control-Allow-Origin`` (and ``Vary: Origin`` when it is
not ``*``). Origins that are not allowed get no CORS headers, which a browser reads as a
refusal; the request itself is served as for any client, since CORS protects browsers'
users, not the server.
"""

from __future__ import annotations

from collections.abc import Sequence

from accord.adapters.http.exchange import Message, Scope, Send

_METHODS = b"GET, POST, DELETE, OPTIONS"
_MAX_AGE = b"600"


class Cors:
    def __init__(self, origins: Sequence[str]) -> None:
        self.any = "*" in origins
        self.origins = frozenset(o.rstrip("/") for o in origins if o != "*")

    def allowed(self, origin: str) -> bool:
        return self.any or origin in self.origins

    def _origin(self, scope: Scope) -> str | None:
        for key, value in scope.get("headers", []):
            if key.lower() == b"origin":
                origin = value.decode("latin-1")
                return origin if self.allowed(origin) else None
        return None

    def _headers(self, origin: str) -> list[tuple[bytes, bytes]]:
        if self.any:
            return [(b"access-control-allow-origin", b"*")]
        return [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]

    def preflight(self, scope: Scope) -> list[tuple[bytes, bytes]] | None:
        """The headers of the 204 answering ``scope`` if it is a preflight from an allowed origin."""
        if scope.get("method") != "OPTIONS":
            return None
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        if b"access-control-request-method" not in headers:
            return None
        origin = self._origin(scope)
        if origin is None:
            return None
        requested = headers.get(b"access-control-request-headers", b"authorization, content-type")
        return [
            *self._headers(origin),
            (b"access-control-allow-methods", _METHODS),
            (b"access-control-allow-headers", requested),
            (b"access-control-max-age", _MAX_AGE),
            (b"content-length", b"0"),
        ]

    def wrap(self, scope: Scope, send: Send) -> Send:
        """``send`` with the CORS headers added to the response start (unchanged if not allowed)."""
        origin = self._origin(scope)
        if origin is None:
            return send
        extra = self._headers(origin)

        async def cors_send(message: Message) -> None:
            if message.get("type") == "http.response.start":
                headers = list(message.get("headers", []))
                message = {**message, "headers": [*headers, *extra]}
            await send(message)

        return cors_send
