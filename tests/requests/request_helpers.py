"""Helpers for the request tests: fixture bodies and a compact, stable view of a Conversation."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import msgspec

from accord.adapters.requests import Conversation

FIXTURES = Path(__file__).parent.parent / "fixtures" / "requests"
GOLDEN = Path(__file__).parent / "golden"


def fixture_body(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())["body"]
    return body


def _compact(value: Any) -> Any:
    """Long strings (Codex's instructions run to tens of kB) are pinned by digest, not copied."""
    if isinstance(value, str) and len(value) > 240:
        digest = hashlib.sha256(value.encode()).hexdigest()[:16]
        return {"chars": len(value), "head": value[:120], "sha256": digest}
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def conversation_view(conv: Conversation) -> Any:
    return _compact(json.loads(msgspec.json.encode(conv)))
