"""SIGTERM/SIGINT → a stop event: how the long-running binaries end cleanly (exit 0) under a kubelet.

Why the Python handler does nothing: a Python signal handler runs in the main thread between two
bytecodes, possibly while that same thread holds a lock, e.g. the logger's while it writes a line, or
the stop Event's own condition lock, and a second signal (a kubelet or an init that signals the process
group and then the process) can run the handler again inside the first one. A handler that logs or sets
an Event then waits forever for a lock its own thread holds, and the process only ends with SIGKILL
after the grace period. Instead the interpreter's C-level handler writes the signal number to a pipe
(`signal.set_wakeup_fd`: no lock, and no dependence on what the main thread is doing), and a watcher
thread logs, sets the event and runs the caller's callback.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

from sriovop.commands._lazylog import lazy_logger

log = lazy_logger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop_on_signals(what: str, on_stop: Callable[[int], None] | None = None,
                    stop: threading.Event | None = None) -> threading.Event:
    """An event (`stop`, or a new one) set by SIGTERM or SIGINT, logged once as "<what> stopping".

    Call from the main thread. `on_stop(signum)` runs once, in the watcher thread, just before the
    event is set (so what it records is visible to whoever waits on the event). Later signals are
    logged at debug level and otherwise ignored: stopping is already under way.
    """
    stop = stop if stop is not None else threading.Event()
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)

    def _handler(_signum: int, _frame: FrameType | None) -> None:
        """Nothing to do here: the wakeup fd has the signal number already."""

    def _watch() -> None:
        first = True
        while True:
            data = os.read(read_fd, 64)
            if not data:
                return
            for signum in data:
                if signum not in STOP_SIGNALS:  # another signal with a Python handler woke the fd
                    continue
                name = signal.Signals(signum).name
                if not first:
                    log.debug(f"{what}: another stop signal while stopping", signal=name)
                    continue
                first = False
                log.info(f"{what} stopping", signal=name)
                if on_stop is not None:
                    on_stop(signum)
                stop.set()

    # A child forked without exec (pyroute2 opens a socket in another network namespace that way) keeps
    # the handlers and the wakeup fd: a SIGTERM it gets would otherwise be read here as ours.
    devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    os.register_at_fork(after_in_child=lambda: os.dup2(devnull, write_fd, inheritable=False))
    threading.Thread(target=_watch, name="stop-signals", daemon=True).start()
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    for signum in STOP_SIGNALS:
        signal.signal(signum, _handler)
    return stop
