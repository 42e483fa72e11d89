"""Local-server safety: a web page the user visits must not be able to drive this server.

Two attacks reach a server on loopback from a browser. A cross-site request (CSRF): a page
posts a "simple" request (``text/plain``, no preflight) to ``http://127.0.0.1:8000``; the
browser sends it with the page's ``Origin``. DNS rebinding: a name the attacker controls
resolves first to the attacker and then to 127.0.0.1, so the page's scripts talk to this
server as same-origin, with the attacker's name in ``Host``. So:

- a request body must be declared ``application/json`` (415 otherwise), which a page can
  only send after a CORS preflight this server does not grant unless told to;
- ``Host`` must name this server (403 otherwise): by default, when it listens on a loopback
  or a named address, the loopback names and that address; on a wildcard address (0.0.0.0,
  ``::``) any name, since the names it is reached by are not known here; ``--allowed-hosts``
  lists them explicitly (``*``: any);
- an ``Origin``, when present, must be one of the allowed origins (403 otherwise). Programs
  (SDKs, curl, agents) send no ``Origin``; browsers always do on a cross-origin request.
"""

from __future__ import annotations

from collections.abc import Sequence

from accord.errors import RequestError

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
_WILDCARD = frozenset({"", "0.0.0.0", "::"})


def host_name(header: str) -> str:
    """The name part of a ``Host`` header: no port, no IPv6 brackets, lower case."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    if header.count(":") == 1:
        return header.partition(":")[0]
    return header


def default_hosts(bind_host: str) -> frozenset[str] | None:
    """The names accepted in ``Host`` when none are configured (None: any)."""
    name = host_name(bind_host) if not bind_host.startswith("::") else bind_host
    if name in _WILDCARD:
        return None
    return _LOOPBACK | {name}


def is_json(content_type: str) -> bool:
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class RequestGuard:
    """Checks ``Host`` and ``Origin`` of every request (see the module docstring)."""

    def __init__(self, hosts: frozenset[str] | None, origins: Sequence[str] = ()) -> None:
        self.hosts = hosts
        self.any_origin = "*" in origins
        self.origins = frozenset(o.rstrip("/").lower() for o in origins if o != "*")

    @classmethod
    def for_server(
        cls, bind_host: str, allowed_hosts: Sequence[str], allowed_origins: Sequence[str]
    ) -> RequestGuard:
        if "*" in allowed_hosts:
            hosts = None
        elif allowed_hosts:
            hosts = frozenset(host_name(h) for h in allowed_hosts)
        else:
            hosts = default_hosts(bind_host)
        return cls(hosts, allowed_origins)

    def check(self, headers: dict[str, str]) -> None:
        host = headers.get("host")
        if self.hosts is not None and host is not None and host_name(host) not in self.hosts:
            raise RequestError(
                "The Host header does not name this server; add the name to --allowed-hosts to serve it.",
                param="Host",
                status=403,
                code="host_not_allowed",
            )
        origin = headers.get("origin")
        if origin is not None and not self.any_origin and origin.rstrip("/").lower() not in self.origins:
            raise RequestError(
                "Requests from this origin are not allowed; add it to --allowed-origins to serve it.",
                param="Origin",
                status=403,
                code="origin_not_allowed",
            )
