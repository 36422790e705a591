"""Read-your-writes for the informer-backed view: judge only after the caches have caught up.

Why: a cache answers in microseconds, but a policy created right after a NodeState (or a Node's
labels, or a peer policy) changed must be judged on the new state, as a live read would. Before a
judgement the barrier learns, for each cached kind, a resourceVersion R_k at or after the API server's
current one and the kind's object count N_k at R_k, each with a LIST of at most one item of that kind:
- the first kind (the anchor: the smallest, policies) with a consistent LIST. kube-apiserver answers
  it from its watch cache once that cache has caught up with etcd's current revision R, which it
  first asks etcd for (a one-item LIST over the kind's key range);
- the other kinds at once, side by side, with `resourceVersion=R&resourceVersionMatch=NotOlderThan`:
  the API server answers them from their watch caches as soon as each has caught up with R (it asks
  etcd for a progress notification when a cache waits), without a request to etcd. At 500 and 5,000
  nodes this costs kube-apiserver and etcd about 1 ms of CPU less per read than a consistent LIST
  (`reads_alone` in test/bench/admission_e2e.py; docs/benchmarks.md); both still grow with the kind.
  A watch cache that cannot catch up within the server's 3 s answers 504 "Too large resource
  version"; that kind is then read with a consistent LIST, as kube-apiserver itself falls back for
  consistent reads.
Each answer means every write of its kind up to R_k is on its way to our watch (N_k is the page's item
plus its `remainingItemCount`). The barrier then waits until every informer either
- has applied an event or bookmark with resourceVersion >= R_k (it has seen everything up to R_k), or
- holds exactly N_k objects and has applied nothing new for `settle` seconds after R_k was read: its
  kind had no write between the informer's last event and R_k. The count makes this exact for creates
  and deletes: a store whose count differs from N_k is missing an event, however late that event
  arrives (under load, watch events were seen to arrive more than 250 ms after the consistent read).
  The settle rule is needed because Kubernetes sends an idle watch a bookmark only about once a
  minute, so an idle kind never reaches R_k by itself; no API tells a client that nothing is in flight.
The residual window is therefore an update (or a create and a delete that cancel out) whose watch
event reaches this process more than `settle` after the read returned (measured on a 2-core
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
    "Time a judgement waited for the informer caches to catch up (the barrier's reads + settle time)",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0, 5.0),
)
ROUNDS = Counter(
    "sriovop_webhook_freshness_rounds",
    "Rounds of the barrier's reads (one LIST per cached kind each); judgements per round = waits / rounds",
)


class RvSource(Protocol):
    """An informer's store: its last applied resourceVersion and how many objects it holds."""

    resource_version: str

    def __len__(self) -> int: ...


class ServerState(NamedTuple):
    """What a read says of one kind: a resourceVersion the server's cache of the kind has reached and,
    when known, how many objects of the kind exist at it."""

    resource_version: str
    objects: int | None = None


#: A kind's read: with None, a consistent LIST of at most one item; with a resourceVersion R, the same
#: LIST answered by a cache at R or later (`resourceVersionMatch=NotOlderThan`).
KindRead = Callable[[str | None], ServerState]


def _int_rv(rv: str) -> int:
    try:
        return int(rv)
    except ValueError:
        return 0


class _Round:
    """One set of reads and the wait for the caches; shared by every request that joined it."""

    __slots__ = ("done", "error", "started")

    def __init__(self, started: float) -> None:
        self.started = started
        self.done = threading.Event()
        self.error: BaseException | None = None


class FreshnessBarrier:
    def __init__(self, kinds: Sequence[tuple[KindRead, RvSource]], settle: float = 0.005,
                 timeout: float = 5.0, poll: float = 0.0005) -> None:
        """`kinds`: per cached kind, (its read, its informer's store), the anchor first (read
        consistently; best the kind with the fewest objects); `poll`: the shortest sleep between two
        looks at a store."""
        self._kinds = list(kinds)
        self.settle = settle
        self.timeout = timeout
        self._poll = poll
        self._cond = threading.Condition()
        self._reading = False  # a round's reads are in flight
        self._latest: _Round | None = None
        # The other kinds' reads run side by side: after the anchor, a round costs the slowest of them.
        self._pool = ThreadPoolExecutor(max(1, len(self._kinds) - 2), thread_name_prefix="freshness")
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
                    raise TimeoutError(f"no read of the API server finished within {self.timeout:.1f}s")
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
        (anchor_read, anchor_store), *rest = self._kinds
        anchor = anchor_read(None)
        if not rest:
            return [(anchor, anchor_store)]
        (own_read, own_store), *pooled = rest  # this thread reads one of them itself
        others = [(self._pool.submit(read, anchor.resource_version), store) for read, store in pooled]
        targets = [(anchor, anchor_store), (own_read(anchor.resource_version), own_store)]
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
