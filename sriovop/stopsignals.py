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

import atexit
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

from sriovop.lazylog import lazy_logger

log = lazy_logger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop_on_signals(what: str, on_stop: Callable[[int], None] | None = None,
                    stop: threading.Event | None = None) -> threading.Event:
    """An event (`stop`, or a new one) set by SIGTERM or SIGINT, logged once as "<what> stopping".

    Call from the main thread. `on_stop(signum)` runs once, in the watcher thread, just before the
    event is set (so what it records is visible to whoever waits on the event). Later signals are
    logged at debug level and otherwise ignored: stopping is already under way, through the
    interpreter's teardown at exit too.
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
    # the handlers and the wakeup fd: a SIGTERM it gets would otherwise be read here as ours. The child
    # points the fd at /dev/null and gets the default actions back (a SIGTERM ends it, as whoever forked
    # it expects); the stop signals stay blocked in the forking thread from just before the fork until
    # then, so a signal sent to the child the moment it exists waits (pending) until that is done. The
    # parent unblocks right after the fork; a stop signal meant for it meanwhile goes to another of its
    # threads or waits the same few microseconds.
    devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)

    def _block() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

    def _unblock() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    def _child() -> None:
        os.dup2(devnull, write_fd, inheritable=False)
        try:  # the forking thread is the child's main thread, so this normally succeeds
            signal.set_wakeup_fd(-1)
        except ValueError:
            pass  # not the main thread after all: the handlers stay, writing to /dev/null
        _set_stop_actions(signal.SIG_DFL)
        _unblock()

    def _ignore_late_signals() -> None:
        """At exit after a stop: the interpreter's teardown puts the default action back for every signal
        with a Python handler, so a late duplicate (the init's or kubelet's second signal) would end a
        clean stop with 143 instead of 0. Ignored signals stay ignored through the teardown."""
        if stop.is_set():
            _set_stop_actions(signal.SIG_IGN)

    atexit.register(_ignore_late_signals)
    os.register_at_fork(before=_block, after_in_parent=_unblock, after_in_child=_child)
    threading.Thread(target=_watch, name="stop-signals", daemon=True).start()
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    for signum in STOP_SIGNALS:
        signal.signal(signum, _handler)
    return stop


def unwind_on_signals(what: str) -> None:
    """For a script whose clean-up is its `finally` blocks (a benchmark that runs fleets and control
    planes): the first SIGTERM or SIGINT unwinds it, as SystemExit(143) or KeyboardInterrupt; the later
    ones are ignored, so a second Ctrl-C, or a `timeout` forwarding the signal the script got itself,
    cannot cut a clean-up short and leave processes writing into directories being removed.

    Call from the main thread. The exception is raised in the main thread wherever it is: that is how
    the unwinding reaches the `finally` blocks.
    """

    def _on_signal(signum: int, _frame: FrameType | None) -> None:
        _set_stop_actions(signal.SIG_IGN)
        # os.write, not print or a logger: the handler may run while the main thread holds their locks
        os.write(2, f"{what}: {signal.Signals(signum).name}, cleaning up (further stop signals are ignored)\n"
                 .encode())
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    _set_stop_actions(_on_signal)


def _set_stop_actions(action: signal.Handlers | Callable[[int, FrameType | None], None]) -> None:
    """SIGTERM's and SIGINT's action, where Python allows it: only the main thread may set one, and from
    another thread the handlers stay (writing to the wakeup fd, which `_child` points at /dev/null)."""
    try:
        for signum in STOP_SIGNALS:
            signal.signal(signum, action)
    except ValueError:
        pass
