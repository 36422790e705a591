"""`retry_on_conflict`: client-go's `util/retry.RetryOnConflict`, on tenacity.

A write that loses a race (409 Conflict: a stale resourceVersion, or AlreadyExists after a create raced
another writer's) is retried from a new read rather than failed or forced: `fn` re-reads and
re-computes on every attempt. client-go's `DefaultRetry` is 5 steps 10 ms apart with 10% jitter; the
same here. `fn` gets the attempt number, so its first attempt may start from a cached read and every
later one must read from the API server (the cache is what was stale).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import tenacity

from sriovop.runtime.errors import Conflict

T = TypeVar("T")

#: client-go's DefaultRetry: 5 attempts, 10 ms apart, 10% jitter.
DEFAULT_ATTEMPTS = 5
DEFAULT_WAIT = tenacity.wait_fixed(0.010) + tenacity.wait_random(0, 0.001)


def retry_on_conflict(fn: Callable[[int], T], *, attempts: int = DEFAULT_ATTEMPTS,
                      wait: tenacity.wait.wait_base = DEFAULT_WAIT) -> T:
    """Call `fn(attempt)` (0, 1, ...) until it returns without a Conflict; the last Conflict is re-raised."""
    retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(attempts), wait=wait, reraise=True,
                                 retry=tenacity.retry_if_exception_type(Conflict))
    for attempt in retrying:
        with attempt:
            return fn(attempt.retry_state.attempt_number - 1)
    raise AssertionError("unreachable")  # pragma: no cover: reraise=True raises the last Conflict
