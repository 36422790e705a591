"""The reflector's retry delay: 0.8 s doubling with jitter, capped at 30 s, reset after 2 min of calm.

Differs from client-go in one place on purpose: the cap applies after jitter (client-go jitters the
capped delay into [30, 60) s); our tests and operators prefer the documented "at most 30 s".
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sriovop.runtime.rand import RNG


class Backoff:
    def __init__(
        self, initial: float = 0.8, factor: float = 2.0, jitter: float = 1.0, cap: float = 30.0,
        reset_after: float = 120.0, clock: Callable[[], float] = time.monotonic,
        rand: Callable[[], float] = RNG.random,
    ) -> None:
        self.initial = initial
        self.factor = factor
        self.jitter = jitter
        self.cap = cap
        self.reset_after = reset_after
        self._clock = clock
        self._rand = rand
        self._delay = initial
        self._last: float | None = None

    def next(self) -> float:
        now = self._clock()
        if self._last is not None and now - self._last >= self.reset_after:
            self._delay = self.initial
        self._last = now
        base = self._delay
        self._delay = min(self._delay * self.factor, self.cap)
        return min(base + base * self.jitter * self._rand(), self.cap)
