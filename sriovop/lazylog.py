"""A module-level logger that imports structlog on first use.

Why: importing structlog costs about 100 ms, which `sriovop COMMAND --help` would pay for nothing.
Command modules keep the familiar `log = lazy_logger(__name__)` at the top; the real structlog logger
is created (once) by the first log call, after `configure_logging` has run.
"""

from __future__ import annotations

from typing import Any


class LazyLogger:
    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attr: str) -> Any:
        if self._logger is None:
            import structlog

            self._logger = structlog.get_logger(self._name)
        return getattr(self._logger, attr)


def lazy_logger(name: str) -> Any:
    return LazyLogger(name)
