"""Start-up problems as the one line ``accord: ...`` shows them."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_settings import SettingsError


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def settings_problem(exc: BaseException) -> str | None:
    """One line saying which setting is wrong and why; None if ``exc`` is not about settings."""
    if isinstance(exc, ValidationError):
        parts = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else ""
            name = f"--{field.replace('_', '-')} / ACCORD_{field.upper()}" if field else "settings"
            parts.append(f"{name}: {error['msg']} (got {_shown(error.get('input'))})")
        return "; ".join(parts)
    if isinstance(exc, SettingsError):
        cause = exc.__cause__
        reason = f": {str(cause).splitlines()[0]}" if cause is not None and str(cause) else ""
        return f"{str(exc).splitlines()[0]}{reason}"
    return None
