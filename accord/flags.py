"""The ``accord serve`` flags, built from the :class:`~accord.config.Settings` fields.

One source: every field is a flag (``max_body_bytes`` -> ``--max-body-bytes``) and an
``ACCORD_<NAME>`` variable; its type, choices and default come from the field, its help text
from the field's ``description`` or, for the fields defined without one, from ``HELP``
below. The README's flag table is :func:`markdown_table` (a test keeps the two in step), and
the choices of ``--profile``, ``--reasoning-parser`` and ``--tool-parser`` are read from their
registries.
"""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from accord.config import Settings

#: Help for the fields that carry no ``description`` of their own. An entry for a field the
#: Settings do not define is never shown.
HELP: dict[str, str] = {
    "host": "address to listen on",
    "port": "TCP port to listen on",
    "worker_class": "event loop hypercorn runs on",
    "engine": "local: the embedded engine; scripted: rules from --script; remote: --upstream servers",
    "script": "rules file of the scripted engine",
    "model": "GGUF file or model directory (embedded engine; default: the packaged SmolLM2)",
    "model_name": "model name to report in responses and /v1/models",
    "served_model_name": "names clients see and may send as `model`; aliases allowed",
    "profile": "model profile: parsers and chat template kwargs (default: detected from the model)",
    "chat_template": "Jinja chat template file, overriding the model's own",
    "reasoning_parser": "how reasoning is split from the answer (default: the profile's)",
    "tool_parser": "how tool calls are parsed from the output (default: the profile's)",
    "max_context": "context length in tokens (default: the model's)",
    "kv_cache_tokens": "positions the embedded engine's KV cache holds, all requests together (its memory)",
    "device": "torch device of the embedded engine: cpu, cuda, cuda:1",
    "upstream": "OpenAI-compatible server to send generations to; repeat or comma-separate for a pool",
    "prefill_upstream": "upstream that runs prefill (disaggregated serving); repeatable",
    "decode_upstream": "upstream that runs decode (disaggregated serving); repeatable",
    "upstream_api_key": "bearer token sent to the upstreams",
    "upstream_connect_timeout": "seconds to wait for a connection to an upstream",
    "upstream_read_timeout": "seconds to wait between bytes from an upstream",
    "upstream_attempts": "tries per generation across the upstreams of a pool",
    "keepalive_interval": "seconds of silence before a stream gets a keepalive event",
    "api_key": "require `Authorization: Bearer KEY` on every route but /health, /ready and /version",
    "secret_key": "key that seals encrypted reasoning (default: one kept in --data-dir)",
    "data_dir": "directory for the sealing key and the default SQLite store",
    "store": "sqlite:///PATH, postgresql://..., or none (default: SQLite in --data-dir)",
    "store_ttl": "seconds a stored response is kept (default 30 days; 0: for ever)",
    "store_max_bytes": "stored bytes past which the oldest finished responses are evicted (0: no cap)",
    "max_content_parts": "most content parts a request may hold, all messages together (400 beyond)",
    "max_schema_bytes": "largest JSON schema a tool or text format may carry, in bytes (400 beyond)",
    "max_json_depth": "deepest JSON nesting a request body may have (400 beyond)",
    "inline_decode_bytes": "bodies larger than this are decoded in a worker process, off the event loop",
    "decode_timeout": "seconds a worker may spend decoding one body (413 beyond)",
    "decode_workers": "worker processes that decode large bodies",
    "max_active_requests": "generation requests running at once (default: twice the engine's batch, or 64)",
    "max_waiting_requests": "requests waiting for a place; past it 429 with Retry-After (default: as many as may run)",
    "queue_timeout": "seconds a request may wait for a place before it is answered 429",
    "retry_after": "seconds sent in Retry-After with a 429 or 503",
    "allowed_hosts": "names accepted in the Host header (default: the loopback names and --host; * for any)",
    "body_timeout": "seconds a request body may take to arrive (408 beyond)",
    "write_timeout": "seconds one write may wait on a client that does not read before its stream is given up",
    "trace_dir": "directory to write one trace per response to (for accord replay)",
    "trace_redact": "leave prompt and output text out of the traces",
    "web_search": "requests that offer the hosted web_search tool: refuse with a 400, or drop the tool",
    "max_body_bytes": "largest request body accepted (413 beyond)",
    "max_input_items": "most input items a request may hold (400 beyond)",
    "max_tools": "most tools a request may offer (400 beyond)",
    "max_string_chars": "longest string a request may hold, in characters (400 beyond)",
    "shutdown_grace": "seconds streams get to finish after SIGTERM before they end failed",
    "log_format": "log lines as JSON or for people (auto: JSON unless stderr is a terminal)",
    "log_level": "the least severe log level written",
    "log_prompts": "include prompt and output text in the logs",
    "allowed_origins": "origins allowed by CORS (comma-separated or repeated; * for any)",
    "ssl_certfile": "TLS certificate file (PEM); serves https with --ssl-keyfile",
    "ssl_keyfile": "TLS private key file (PEM)",
}

#: Flags whose choices come from a registry rather than from the field's type.
REGISTRIES: dict[str, Callable[[], list[str]]] = {}


def _profiles() -> list[str]:
    from accord.adapters.templates import profile_names

    return profile_names()


def _reasoning() -> list[str]:
    from accord.pipeline.reasoning import reasoning_parser_names

    return reasoning_parser_names()


def _tools() -> list[str]:
    from accord.pipeline.tools import tool_parser_names

    return tool_parser_names()


REGISTRIES.update(profile=_profiles, reasoning_parser=_reasoning, tool_parser=_tools)


@dataclass(frozen=True)
class Flag:
    """One serve flag as argparse, ``--help`` and the README see it."""

    name: str
    flag: str
    env: str
    help: str
    default: Any
    kwargs: dict[str, Any]

    @property
    def default_text(self) -> str:
        if self.default is None or self.default == []:
            return "-"
        if isinstance(self.default, bool):
            return "on" if self.default else "off"
        if isinstance(self.default, Path) and self.default.is_relative_to(Path.home()):
            return "~/" + str(self.default.relative_to(Path.home()))
        return str(self.default)


def _unwrap_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _default(info: FieldInfo) -> Any:
    if info.default is not PydanticUndefined:
        return info.default
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return None


def _metavar(name: str, kind: Any) -> str:
    if kind is Path:
        return "DIR" if name.endswith("_dir") else "FILE"
    if kind is float:
        return "SECONDS" if any(w in name for w in ("timeout", "interval", "grace", "ttl")) else "X"
    if kind is int:
        return "N"
    return name.rsplit("_", 1)[-1].upper()


def _kwargs(name: str, info: FieldInfo) -> dict[str, Any]:
    kind = _unwrap_optional(info.annotation)
    if typing.get_origin(kind) is typing.Annotated:
        kind = typing.get_args(kind)[0]
    if kind is bool:
        return {"action": argparse.BooleanOptionalAction, "default": None}
    if name in REGISTRIES:
        return {"choices": REGISTRIES[name](), "metavar": "NAME"}
    if typing.get_origin(kind) is Literal:
        choices = [c for c in typing.get_args(kind) if c is not None]
        return {"choices": choices}
    if typing.get_origin(kind) is list:
        return {"action": "append", "metavar": "URL" if "upstream" in name else "VALUE"}
    if kind in (int, float, Path):
        return {"type": kind, "metavar": _metavar(name, kind)}
    return {"metavar": _metavar(name, kind)}


def serve_flags() -> Iterator[Flag]:
    """Every Settings field as a flag, in the order the Settings define them."""
    for name, info in Settings.model_fields.items():
        text = info.description or HELP.get(name) or name.replace("_", " ")
        yield Flag(
            name=name,
            flag="--" + name.replace("_", "-"),
            env="ACCORD_" + name.upper(),
            help=text,
            default=_default(info),
            kwargs=_kwargs(name, info),
        )


def undocumented() -> list[str]:
    """Settings fields with neither a description nor an entry in ``HELP``."""
    return [n for n, info in Settings.model_fields.items() if not (info.description or n in HELP)]


def help_text(f: Flag) -> str:
    """The ``--help`` line: the description, the registry's names, the default and the variable."""
    text = f.help
    if f.name in REGISTRIES:
        text += "; one of: " + ", ".join(f.kwargs["choices"])
    # A description that says what an unset value means already tells the default.
    if f.default_text == "-" and "(default:" in f.help:
        return f"{text} [env {f.env}]"
    return f"{text} [default: {f.default_text}; env {f.env}]"


def add_serve_flags(parser: argparse.ArgumentParser) -> None:
    for f in serve_flags():
        parser.add_argument(f.flag, dest=f.name, help=help_text(f), **f.kwargs)


def settings_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The flags given on the command line (unset ones are left to the environment and defaults)."""
    given = {f.name: getattr(args, f.name, None) for f in serve_flags()}
    return {k: v for k, v in given.items() if v is not None}


def markdown_table() -> str:
    """The README's flag table."""
    rows = ["| flag | environment | default | what |", "| --- | --- | --- | --- |"]
    for f in serve_flags():
        choices = f.kwargs.get("choices")
        what = f.help.replace("|", "\\|")
        if choices and f.name not in REGISTRIES:
            what += " (" + ", ".join(f"`{c}`" for c in choices) + ")"
        rows.append(f"| `{f.flag}` | `{f.env}` | `{f.default_text}` | {what} |")
    return "\n".join(rows) + "\n"
