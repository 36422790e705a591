"""Process-wide structlog configuration shared by every sriovop binary.

JSON is the production format because log pipelines parse it; `console` is for people at a terminal.
structlog owns every line: our own loggers and the standard-library loggers of our dependencies
(urllib3, kubernetes, pyroute2, grpc, ...) end in the same `ProcessorFormatter`, so a JSON log is
JSON throughout and a pipeline never meets a plain-text line from a library.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog

LogFormat = Literal["json", "console"]

#: Processors every event passes, whether it was logged through structlog or the standard library.
_SHARED: list[structlog.types.Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.processors.StackInfoRenderer(),
]
#: Standard-library loggers are quieter than ours: a library's INFO (urllib3's "Resetting dropped
#: connection", ...) is noise for an operator's log; its warnings and errors are kept.
_LIBRARY_FLOOR = logging.WARNING


def _renderer(fmt: LogFormat) -> structlog.types.Processor:
    return structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)


def _level(level: str) -> int:
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"log level {level!r} is not one of debug, info, warning, error")
    return numeric


class _OwnLevel(logging.Filter):
    """Our loggers (`sriovop.*`) at the configured level, everyone else's at least at WARNING."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        own = record.name == "sriovop" or record.name.startswith("sriovop.")
        return record.levelno >= (self.level if own else max(self.level, _LIBRARY_FLOOR))


def configure_logging(level: str = "info", fmt: LogFormat = "json") -> None:
    """Route structlog and the standard library through one formatter writing to stderr."""
    numeric = _level(level)
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_SHARED,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_SHARED,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            _renderer(fmt),
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    handler.addFilter(_OwnLevel(numeric))
    handler.set_name("sriovop")
    root = logging.getLogger()
    for old in list(root.handlers):  # ours from an earlier call; others' (a test runner's capture) stay
        if old.get_name() == handler.get_name():
            root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)


def current_format() -> LogFormat:
    """The format the root handler renders now (json when logging was never configured)."""
    for handler in logging.getLogger().handlers:
        formatter = handler.formatter
        if isinstance(formatter, structlog.stdlib.ProcessorFormatter) and any(
                isinstance(p, structlog.dev.ConsoleRenderer) for p in formatter.processors):
            return "console"
    return "json"


def set_level(level: str) -> None:
    """Change the level of a running process (the operator config's logLevel is live)."""
    configure_logging(level, current_format())
