"""Process-wide structlog configuration shared by every sriovop binary.

JSON is the production format because log pipelines parse it; `console` is for people at a terminal.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog

LogFormat = Literal["json", "console"]


def configure_logging(level: str = "info", fmt: LogFormat = "json") -> None:
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"log level {level!r} is not one of debug, info, warning, error")
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=max(numeric, logging.WARNING), stream=sys.stderr)


def set_level(level: str) -> None:
    """Change the level of a running process (the operator config's logLevel is live)."""
    fmt: LogFormat = "json"
    cfg = structlog.get_config()
    if cfg["processors"] and isinstance(cfg["processors"][-1], structlog.dev.ConsoleRenderer):
        fmt = "console"
    configure_logging(level, fmt)
