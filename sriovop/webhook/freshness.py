"""Read-your-writes for the informer-backed view: judge only after the caches have caught up.

Why: a cache answers in microseconds, but a policy created right after a NodeState (or a Node's
labels) changed must be judged on the new state, as a live read would. (Peer policies are not cached
at all: the informer view reads them live.) Before a
judgement the barrier reads, for each cached kind, the API server's current resourceVersion R with a
consistent LIST of at most one item of that kind (about 1 ms; kube-apiserver serves it from its
watch cache only once that cache has caught up with etcd, so every write of the kind up to R is
then on its way to our watch). It then waits until every informer either
- has applied an event or bookmark with resourceVersion >= R (it has seen everything up to R), or
- has applied nothing new for `settle` seconds after R was read: its kind had no write between the
  informer's last event and R. This rule is needed because Kubernetes sends an idle watch a bookmark
  only about once a minute, so an idle kind never reaches R by itself; no API tells a client that
  nothing is in flight.
The residual window is therefore a write whose watch event reaches this process more than `settle`
after the consistent read returned (measured on a 2-core machine at load 13: p99 4 ms, worst of 200
107 ms; `--cache-settle` trades latency for a wider margin, `--no-cache` reads live and has no window).
Requests arriving while a round runs share the next round, so 8 concurrent requests cost about one
round, not 8. A round that cannot finish within `timeout` raises TimeoutError, which the handler
turns into a denial (as failurePolicy Fail would), never an allow on stale data.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol


class RvSource(Protocol):
    """Something whose last applied resourceVersion can be read (an informer's store)."""

    resource_version: str


def _int_rv(rv: str) -> int:
    try:
        return int(rv)
    except ValueError:
        return 0


class FreshnessBarrier:
    def __init__(self, kinds: Sequence[tuple[Callable[[], str], RvSource]], settle: float = 0.005,
                 timeout: float = 5.0, poll: float = 0.0005) -> None:
        """`kinds`: per cached kind, (a consistent read of the current resourceVersion, its informer's store)."""
        self._kinds = list(kinds)
        self.settle = settle
        self.timeout = timeout
        self._poll = poll
        self._cond = threading.Condition()
        self._running = False
        self._last_round_started = -1.0
        self._last_error: BaseException | None = None
        self.rounds = 0

    def wait(self) -> None:
        """Return once the caches reflect every write committed before this call."""
        arrived = time.monotonic()
        with self._cond:
            while True:
                if self._last_round_started >= arrived:  # a round that began after we arrived has ended
                    if self._last_error is not None:
                        raise TimeoutError(str(self._last_error))
                    return
                if not self._running:
                    self._running = True
                    break
                self._cond.wait(self.timeout)
        started = time.monotonic()
        error: BaseException | None = None
        try:
            self._round()
        except BaseException as exc:
            error = exc
            raise
        finally:
            with self._cond:
                self._running = False
                self._last_round_started = started
                self._last_error = error
                self.rounds += 1
                self._cond.notify_all()

    def _round(self) -> None:
        targets = [(_int_rv(current_rv()), store) for current_rv, store in self._kinds]
        read_at = time.monotonic()
        deadline = read_at + self.timeout
        for target, store in targets:
            seen, since = store.resource_version, read_at
            while True:
                current = store.resource_version
                if _int_rv(current) >= target:
                    break
                now = time.monotonic()
                if current != seen:
                    seen, since = current, now
                elif now - since >= self.settle:
                    break
                if now > deadline:
                    raise TimeoutError(
                        f"the webhook's cache did not catch up with resourceVersion {target} within "
                        f"{self.timeout:.1f}s (it is at {current})")
                time.sleep(self._poll)
