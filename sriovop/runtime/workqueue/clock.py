"""A clock seam so queue timing (delays, metrics ages, token buckets) can be driven by tests.

Every timing decision in the work queues reads `now()` from a Clock and sleeps through `wait()`, so a
FakeClock makes client-go's fake-clock tests portable without real sleeps or timing assertions.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a monotonic scale; only differences are meaningful."""
        ...

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """Block on `cond` (held by the caller) for at most `timeout` clock seconds, or until notified.

        Spurious returns are allowed; callers re-check their predicate against `now()`.
        """
        ...


class RealClock:
    """time.monotonic(): immune to wall-clock jumps, which is what every expiry and backoff needs."""

    # The builtin itself, not a wrapper: queues read the clock several times per item.
    now = staticmethod(time.monotonic)

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        cond.wait(None if timeout is None else max(0.0, timeout))


REAL_CLOCK = RealClock()


class FakeClock:
    """A clock that moves only when a test calls `step`; waiters are woken so they re-check the time."""

    # Real seconds a waiter sleeps between re-checks, in case a notification races with its wait.
    _POLL = 0.05

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._lock = threading.Lock()
        self._waiters: weakref.WeakSet[threading.Condition] = weakref.WeakSet()

    def now(self) -> float:
        with self._lock:
            return self._now

    def step(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
            waiters = list(self._waiters)
        for cond in waiters:
            with cond:
                cond.notify_all()

    def set(self, now: float) -> None:
        self.step(now - self.now())

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        with self._lock:
            self._waiters.add(cond)
        if timeout is not None and timeout <= 0:
            return
        cond.wait(self._POLL)
