"""structlog set-up: JSON lines in production, readable lines in a terminal (SPEC H2)."""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog


def configure_logging(
    fmt: Literal["auto", "json", "console"] = "auto", level: int | str = logging.INFO
) -> None:
    """``level``: a ``logging`` level or its name (``debug``, ``info``, ``warning``, ``error``).

    Console lines are coloured only when stderr is a terminal (never into a file or a pipe).
    """
    if isinstance(level, str):
        level = logging.getLevelNamesMapping()[level.upper()]
    tty = sys.stderr.isatty()
    use_json = fmt == "json" or (fmt == "auto" and not tty)
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer(colors=tty)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
