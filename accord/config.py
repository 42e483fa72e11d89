"""Server configuration: every ``accord serve`` flag, also settable as ``ACCORD_<NAME>``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

#: The default port. Not 8000: that is vLLM's (and SGLang's 30000 is left alone too), and accord
#: in front of a vLLM on the same host is the common way to run it.
DEFAULT_PORT = 8400


def default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "accord"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ACCORD_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    worker_class: Literal["asyncio", "trio"] = "asyncio"

    #: None: ``remote`` when an upstream is named, else ``local`` (see adapters.build.engine_kind).
    engine: Literal["local", "scripted", "remote"] | None = None
    script: Path | None = None
    #: A GGUF file, a Hugging Face model directory, or (remote engine) a Hugging Face repo id.
    model: Path | None = None
    model_name: str | None = None
    #: What clients see in /v1/models and may send as ``model`` (remote engine); the first is reported.
    served_model_name: Annotated[list[str], NoDecode] = Field(default_factory=list)
    profile: str | None = None
    chat_template: Path | None = None
    reasoning_parser: str | None = None
    tool_parser: str | None = None
    max_context: int | None = None
    #: Positions the embedded engine's paged KV cache holds, all requests together.
    kv_cache_tokens: int = Field(default=16384, ge=64)
    device: str | None = None

    upstream: Annotated[list[str], NoDecode] = Field(default_factory=list)
    prefill_upstream: Annotated[list[str], NoDecode] = Field(default_factory=list)
    decode_upstream: Annotated[list[str], NoDecode] = Field(default_factory=list)
    #: Sent upstream as ``Authorization: Bearer`` (a vLLM started with ``--api-key``).
    upstream_api_key: str | None = None

    upstream_connect_timeout: float = 5.0
    upstream_read_timeout: float = 600.0
    upstream_attempts: int = 3

    keepalive_interval: float = 10.0
    api_key: str | None = None
    secret_key: str | None = None
    data_dir: Path = Field(default_factory=default_data_dir)
    store: str | None = None
    #: Seconds a stored response is kept (0: for ever); 30 days, as the OpenAI API keeps them.
    store_ttl: float | None = 30 * 24 * 3600.0
    #: Stored bytes past which the oldest finished responses are evicted (0: no cap).
    store_max_bytes: int | None = 1 << 30
    trace_dir: Path | None = None
    trace_redact: bool = False
    web_search: Literal["refuse", "drop"] = "refuse"

    max_body_bytes: int = 32 * 1024 * 1024
    max_input_items: int = 10_000
    max_tools: int = 512
    max_string_chars: int = 8 * 1024 * 1024
    max_content_parts: int = 20_000
    max_schema_bytes: int = 256 * 1024
    max_json_depth: int = 64
    #: Bodies above this size are decoded in a worker process, off the event loop.
    inline_decode_bytes: int = 256 * 1024
    decode_timeout: float = 10.0
    decode_workers: int = 2
    #: Generation requests running at once (None: twice the engine's batch, or 64).
    max_active_requests: int | None = None
    #: Requests waiting for a place (None: as many as may run).
    max_waiting_requests: int | None = None
    queue_timeout: float = 10.0
    retry_after: float = 2.0
    #: Names accepted in the Host header (empty: the loopback names and --host; ``*``: any).
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    #: Seconds a request body may take to arrive (a slow body is cut off with 408).
    body_timeout: float = 30.0
    #: Seconds one write may wait on a client that does not read before its stream is given up.
    write_timeout: float = 30.0
    shutdown_grace: float = 30.0
    log_format: Literal["auto", "json", "console"] = "auto"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_prompts: bool = False
    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None

    @field_validator(
        "upstream",
        "prefill_upstream",
        "decode_upstream",
        "served_model_name",
        "allowed_hosts",
        "allowed_origins",
        mode="before",
    )
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        """``ACCORD_UPSTREAM=http://a:8000,http://b:8000``; repeated flags may also hold commas."""
        items = [value] if isinstance(value, str) else value
        if isinstance(items, list | tuple):
            return [part.strip() for item in items for part in str(item).split(",") if part.strip()]
        return value
