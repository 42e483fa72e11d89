"""Server configuration: every ``accord serve`` flag, also settable as ``ACCORD_<NAME>``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


def default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "accord"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ACCORD_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8000
    worker_class: Literal["asyncio", "trio"] = "asyncio"

    engine: Literal["local", "scripted", "remote"] = "local"
    script: Path | None = None
    model: Path | None = None
    model_name: str | None = None
    profile: str | None = None
    chat_template: Path | None = None
    reasoning_parser: str | None = None
    tool_parser: str | None = None
    max_context: int | None = None
    device: str | None = None

    upstream: Annotated[list[str], NoDecode] = Field(default_factory=list)
    prefill_upstream: Annotated[list[str], NoDecode] = Field(default_factory=list)
    decode_upstream: Annotated[list[str], NoDecode] = Field(default_factory=list)

    upstream_connect_timeout: float = 5.0
    upstream_read_timeout: float = 600.0
    upstream_attempts: int = 3

    keepalive_interval: float = 10.0
    api_key: str | None = None
    secret_key: str | None = None
    data_dir: Path = Field(default_factory=default_data_dir)
    store: str | None = None
    store_ttl: float | None = None
    trace_dir: Path | None = None
    trace_redact: bool = False
    web_search: Literal["refuse", "drop"] = "refuse"

    max_body_bytes: int = 32 * 1024 * 1024
    max_input_items: int = 10_000
    max_tools: int = 512
    max_string_chars: int = 8 * 1024 * 1024
    shutdown_grace: float = 30.0
    log_format: Literal["auto", "json", "console"] = "auto"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_prompts: bool = False
    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None

    @field_validator("upstream", "prefill_upstream", "decode_upstream", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        """``ACCORD_UPSTREAM=http://a:8000,http://b:8000``; repeated flags may also hold commas."""
        items = [value] if isinstance(value, str) else value
        if isinstance(items, list | tuple):
            return [part.strip() for item in items for part in str(item).split(",") if part.strip()]
        return value

    @field_validator("allowed_origins", mode="before")
    @classmethod
    def _origins(cls, value: Any) -> Any:
        """``--allowed-origins https://a.example,https://b.example`` (``*``: any origin)."""
        items = [value] if isinstance(value, str) else value
        if isinstance(items, list | tuple):
            return [part.strip() for item in items for part in str(item).split(",") if part.strip()]
        return value
