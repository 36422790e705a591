"""SIGTERM/SIGINT → a stop event: how the long-running binaries end cleanly (exit 0) under a kubelet."""

from __future__ import annotations

import signal
import threading
from types import FrameType

from sriovop.commands._lazylog import lazy_logger

log = lazy_logger(__name__)


def stop_on_signals(what: str) -> threading.Event:
    """An event set by SIGTERM or SIGINT (logged as "<what> stopping"); call from the main thread."""
    stop = threading.Event()

    def _stop(signum: int, _frame: FrameType | None) -> None:
        log.info(f"{what} stopping", signal=signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    return stop
