"""The suite's one way to wait for a condition: poll it until it holds, with a generous deadline.

The deadline only turns a hang into a clear failure; it is never a timing assertion, so every test that
waits passes on a busy machine as on an idle one. Polling starts fast (a millisecond) and slows down
to `interval`, so a condition that is already true or about to be costs no sleep, and a long wait
against an API server costs it a request per `interval` at most.

By default an exception from the predicate counts as "not yet" (a NotFound while waiting for a
creation, a KeyError while a status is still empty, a refused connection while a server restarts):
the failure message shows the last value or exception, so a predicate that always raises still fails
clearly. A caller whose predicate raises to fail at once narrows `tolerate` to the errors that mean
"not yet".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

class TimedOut(AssertionError):
    """The condition did not hold within the deadline: a test failure, and the one exception a caller
    that only wants to know whether it held (and goes on either way) catches."""


#: The first pause between two checks; each pause doubles up to the caller's `interval`.
FIRST_PAUSE = 0.001


def wait_for(predicate: Callable[[], T], timeout: float = 30.0, what: str = "condition",
             interval: float = 0.1,
             tolerate: tuple[type[Exception], ...] = (Exception,)) -> T:
    """Return the predicate's first truthy value; raise TimedOut naming `what` and the last value
    (or exception) when none came within `timeout` seconds. The predicate is checked at least once,
    and once more after the deadline passed, so a slow check never fails for lack of a last look."""
    deadline = time.monotonic() + timeout
    pause = min(FIRST_PAUSE, interval)
    last: object = None
    while True:
        expired = time.monotonic() > deadline
        try:
            value = predicate()
        except tolerate as exc:  # not yet: see the module docstring
            last = exc
        else:
            if value:
                return value
            last = value
        if expired:
            raise TimedOut(f"timed out after {timeout}s waiting for {what}; last value: {last!r}")
        time.sleep(pause)
        pause = min(pause * 2, interval)
