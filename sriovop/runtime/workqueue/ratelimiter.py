"""Rate limiters deciding how long a failed item waits before it is retried (default_rate_limiters.go).

All durations are float seconds. `when(item)` both answers and records a failure, so call it once per
retry; `forget(item)` clears an item's failure history when it finally succeeds (or is given up on).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Protocol

from sriovop.runtime.workqueue.clock import REAL_CLOCK, Clock


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds `item` should wait before its next attempt; records this attempt."""
        ...

    def forget(self, item: Hashable) -> None:
        """Clear the failure history of `item` (it does not remove it from any queue)."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many times `item` has been through `when` since it was last forgotten."""
        ...


def _check_non_negative(field: str, value: float) -> None:
    if value < 0:
        raise ValueError(f"{field} must be >= 0 seconds, got {value!r}")


class ItemExponentialFailureRateLimiter:
    """base * 2**failures per item, clamped to max_delay (overflow included)."""

    def __init__(self, base_delay: float, max_delay: float) -> None:
        _check_non_negative("base_delay", base_delay)
        _check_non_negative("max_delay", max_delay)
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            exp = self._failures.get(item, 0)
            self._failures[item] = exp + 1
        if exp > 1023:  # 2**1024 overflows a double: the clamp applies long before
            return self.max_delay
        backoff = self.base_delay * float(2**exp)
        return min(backoff, self.max_delay)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)


class ItemFastSlowRateLimiter:
    """`fast_delay` for the first `max_fast_attempts` failures of an item, `slow_delay` afterwards."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        _check_non_negative("fast_delay", fast_delay)
        _check_non_negative("slow_delay", slow_delay)
        if max_fast_attempts < 0:
            raise ValueError(f"max_fast_attempts must be >= 0, got {max_fast_attempts!r}")
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            n = self._failures.get(item, 0) + 1
            self._failures[item] = n
        return self.fast_delay if n <= self.max_fast_attempts else self.slow_delay

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)


class BucketRateLimiter:
    """A token bucket shared by all items (golang.org/x/time/rate reservation semantics).

    Every `when` takes one token whatever the item; when the bucket is empty the returned wait is the
    time until that token accrues, so a burst of failures is spread out at `qps`.
    """

    def __init__(self, qps: float, burst: int, clock: Clock = REAL_CLOCK) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be > 0, got {qps!r}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst!r}")
        self.qps = float(qps)
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock.now()
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            now = self._clock.now()
            elapsed = max(0.0, now - self._last)
            self._last = max(now, self._last)
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps) - 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def num_requeues(self, item: Hashable) -> int:
        return 0

    def forget(self, item: Hashable) -> None:
        pass


class MaxOfRateLimiter:
    """Asks every limiter (so each one's state advances) and uses the longest wait."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)


class WithMaxWaitRateLimiter:
    """Caps another limiter's delay at `max_delay`."""

    def __init__(self, limiter: RateLimiter, max_delay: float) -> None:
        _check_non_negative("max_delay", max_delay)
        self.limiter = limiter
        self.max_delay = max_delay

    def when(self, item: Hashable) -> float:
        return min(self.limiter.when(item), self.max_delay)

    def num_requeues(self, item: Hashable) -> int:
        return self.limiter.num_requeues(item)

    def forget(self, item: Hashable) -> None:
        self.limiter.forget(item)


def default_controller_rate_limiter(clock: Clock = REAL_CLOCK) -> RateLimiter:
    """client-go's DefaultControllerRateLimiter: per-item 5 ms→1000 s, and 10 qps / burst 100 overall."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )


def default_item_based_rate_limiter() -> RateLimiter:
    """client-go's DefaultItemBasedRateLimiter: per-item 1 ms→1000 s."""
    return ItemExponentialFailureRateLimiter(0.001, 1000.0)
