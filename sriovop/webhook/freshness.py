"""Read-your-writes for the informer-backed view: judge only after the caches have caught up.

Why: a cache answers in microseconds, but a policy created right after a NodeState (or a Node's
labels, or a peer policy) changed must be judged on the new state, as a live read would. Before a
judgement the barrier reads, for each cached kind and all kinds at once, the API server's current
resourceVersion R and the kind's object count N with a consistent LIST of at most one item of that
kind (about 1 ms; kube-apiserver serves it from its watch cache only once that cache has caught up
with etcd, so every write of the kind up to R is then on its way to our watch; N is the page's item
plus its `remainingItemCount`). It then waits until every informer either
- has applied an event or bookmark with resourceVersion >= R (it has seen everything up to R), or
- holds exactly N objects and has applied nothing new for `settle` seconds after R was read: its kind
  had no write between the informer's last event and R. The count makes this exact for creates and
  deletes: a store whose count differs from N is missing an event, however late that event arrives
  (under load, watch events were seen to arrive more than 250 ms after the consistent read). The
  settle rule is needed because Kubernetes sends an idle watch a bookmark only about once a minute, so
  an idle kind never reaches R by itself; no API tells a client that nothing is in flight.
The residual window is therefore an update (or a create and a delete that cancel out) whose watch
event reaches this process more than `settle` after the consistent read returned (measured on a 2-core
machine at load 13: p99 4 ms, worst of 200 107 ms; `--cache-settle` trades latency for a wider margin,
`--no-cache` reads live and has no window).
Requests share rounds without waiting for one another: a request joins a round whose reads had not
started when it arrived, or starts one as soon as no other round is reading (rounds overlap in their
settle phase), so 8 concurrent requests cost a few rounds, not 8, and none waits for a whole round
that began before it arrived. A round that cannot finish within `timeout` raises TimeoutError, which the handler
turns into a denial (as failurePolicy Fail would), never an allow on stale data.
A round sleeps while it waits, and the informers wake it: their event handlers call `note_change`,
so a round looks again when a store moved, or when the settle time is up, and not on a timer (most
rounds spend the whole settle time waiting on an idle kind; looking every half millisecond took a
quarter of the barrier's own CPU per round, measured with instant reads). A store that moves without
an event (a bookmark) is seen at the next look, at the latest when the settle time is up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple, Protocol

from prometheus_client import Counter, Histogram

WAIT = Histogram(
    "sriovop_webhook_freshness_wait_seconds",
    "Time a judgement waited for the informer caches to catch up (consistent reads + settle time)",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0, 5.0),
)
ROUNDS = Counter(
    "sriovop_webhook_freshness_rounds",
    "Rounds of consistent reads (one LIST per cached kind each); judgements per round = waits / rounds",
)


class RvSource(Protocol):
    """An informer's store: its last applied resourceVersion and how many objects it holds."""

    resource_version: str

    def __len__(self) -> int: ...


class ServerState(NamedTuple):
    """What a consistent read says of one kind: the current resourceVersion and, when known, how many
    objects of the kind exist at it."""

    resource_version: str
    objects: int | None = None


def _int_rv(rv: str) -> int:
    try:
        return int(rv)
    except ValueError:
        return 0


class _Round:
    """One set of consistent reads and the wait for the caches; shared by every request that joined it."""

    __slots__ = ("done", "error", "started")

    def __init__(self, started: float) -> None:
        self.started = started
        self.done = threading.Event()
        self.error: BaseException | None = None


class FreshnessBarrier:
    def __init__(self, kinds: Sequence[tuple[Callable[[], ServerState], RvSource]], settle: float = 0.005,
                 timeout: float = 5.0, poll: float = 0.0005) -> None:
        """`kinds`: per cached kind, (a consistent read of its ServerState, its informer's store);
        `poll`: the shortest sleep between two looks at a store."""
        self._kinds = list(kinds)
        self.settle = settle
        self.timeout = timeout
        self._poll = poll
        self._cond = threading.Condition()
        self._reading = False  # a round's consistent reads are in flight
        self._latest: _Round | None = None
        # The kinds' reads run side by side: a round costs the slowest read, not their sum.
        self._pool = ThreadPoolExecutor(max(1, len(self._kinds) - 1), thread_name_prefix="freshness")
        self.rounds = 0
        self._changed = threading.Condition()
        self._changes = 0  # stores' moves announced by note_change

    def note_change(self) -> None:
        """An informer applied an event (its store's resourceVersion or count moved): wake the rounds
        that wait. Called from the informers' event handlers."""
        with self._changed:
            self._changes += 1
            self._changed.notify_all()

    def wait(self) -> None:
        """Return once the caches reflect every write committed before this call."""
        with WAIT.time():
            self._wait()

    def _wait(self) -> None:
        arrived = time.monotonic()
        deadline = arrived + self.timeout
        with self._cond:
            while True:
                latest = self._latest
                if latest is not None and latest.started >= arrived:  # its reads began after we arrived
                    own = None
                    break
                if not self._reading:
                    self._reading = True
                    own = latest = self._latest = _Round(time.monotonic())
                    self.rounds += 1
                    ROUNDS.inc()
                    break
                if not self._cond.wait(max(0.0, deadline - time.monotonic())):
                    raise TimeoutError(f"no consistent read of the API server finished within {self.timeout:.1f}s")
        if own is not None:
            self._run(own)
        elif not latest.done.wait(max(0.0, deadline - time.monotonic())):
            raise TimeoutError(f"the webhook's caches did not catch up within {self.timeout:.1f}s")
        if latest.error is not None:
            raise TimeoutError(str(latest.error))

    def close(self) -> None:
        self._pool.shutdown(wait=False)

    def _run(self, round_: _Round) -> None:
        try:
            try:
                targets = self._read_targets()
            finally:
                with self._cond:
                    self._reading = False
                    self._cond.notify_all()
            self._settle(targets)
        except BaseException as exc:  # every caller of the round must learn of it, not only this one
            round_.error = exc
        finally:
            round_.done.set()

    def _read_targets(self) -> list[tuple[ServerState, RvSource]]:
        first, *rest = self._kinds
        others = [(self._pool.submit(read), store) for read, store in rest]
        targets = [(first[0](), first[1])]
        targets += [(future.result(), store) for future, store in others]
        return targets

    def _settle(self, targets: Sequence[tuple[ServerState, RvSource]]) -> None:
        read_at = time.monotonic()
        deadline = read_at + self.timeout
        for (target_rv, objects), store in targets:
            target = _int_rv(target_rv)
            seen, since = store.resource_version, read_at
            while True:
                changes = self._changes  # before the look: a move after it ends the sleep below at once
                current = store.resource_version
                if _int_rv(current) >= target:
                    break
                now = time.monotonic()
                if current != seen:
                    seen, since = current, now
                elif now - since >= self.settle and (objects is None or len(store) == objects):
                    break
                if now > deadline:
                    held = "" if objects is None else f", holds {len(store)} of {objects} objects"
                    raise TimeoutError(
                        f"the webhook's cache did not catch up with resourceVersion {target} within "
                        f"{self.timeout:.1f}s (it is at {current}{held})")
                # Until the settle time is up; past it (a count still short: an event is missing), in
                # steps of the settle time, so a store without handlers is looked at all the same.
                until = since + self.settle if since + self.settle > now else now + max(self.settle, self._poll)
                self._sleep(changes, min(until, deadline + self._poll) - now)

    def _sleep(self, changes: int, seconds: float) -> None:
        """Up to `seconds`, or until a store moved after the count `changes` was read."""
        with self._changed:
            self._changed.wait_for(lambda: self._changes != changes, max(self._poll, seconds))
