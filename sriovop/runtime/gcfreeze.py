"""Keep the informer caches out of the cyclic garbage collector's full collections.

Why: CPython's full (generation 2) collection walks every tracked container in the process, and the
cache's objects are all tracked (`FrozenDict`/`FrozenList` are dict and list subclasses, which CPython
never untracks). With 5,000 Nodes and NodeStates cached, one full collection stopped every thread of
the webhook for 85-150 ms. Under a steady stream of admissions a full collection comes every few
minutes (whenever objects that outlived younger collections reach a quarter of the old generation),
and every request in flight waits for it: the tail of the admission latency.

What: once the caches have synced, `freeze_now()` collects in full and calls `gc.freeze()`, which moves
every object alive then to a permanent generation that collections skip. Later objects (cache
updates, requests) are collected as before, and a full collection walks only them. A frozen object is
still freed by reference counting when the cache drops it; what freezing gives up is finding a
reference cycle among frozen objects. So the freezer never keeps one for ever: when the old
generation has regrown to `REFREEZE_RATIO` of the frozen count (the cache has been replaced by that
much churn), its thread unfreezes everything, collects in full (one long pause where CPython would
have taken several) and freezes again.
"""

from __future__ import annotations

import gc
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import structlog
from prometheus_client import Counter, Gauge

__all__ = ["REFREEZE_RATIO", "GcFreezer", "freeze_after", "freeze_now"]

log = structlog.get_logger(__name__)

#: The old generation's size, against the frozen count, at which everything is collected and frozen
#: again. CPython itself collects in full when what survived younger collections reaches a quarter of
#: the old generation.
REFREEZE_RATIO = 0.25

FREEZES = Counter("sriovop_gc_freezes_total",
                  "Full collections followed by gc.freeze(), at cache sync and when the old generation regrew")
FROZEN = Gauge("sriovop_gc_frozen_objects", "Objects in the permanent generation after the last freeze")


class GcFreezer:
    """The process's freezer: `freeze()` now, then again whenever a full collection leaves an old
    generation of `ratio` x the frozen count or more (checked in a `gc.callbacks` hook, done by a
    thread of its own: the collector ignores `gc.collect()` from inside its callbacks).

    The hook runs wherever a collection starts, in any thread, possibly while that thread holds a
    lock (an Event's, a logger's), so it takes none: it sets a flag and puts on a `SimpleQueue`,
    whose `put` is safe to call from such places (unlike `Event.set`, which would deadlock on its
    own lock held by the interrupted thread)."""

    def __init__(self, ratio: float = REFREEZE_RATIO) -> None:
        self.ratio = ratio
        self.frozen = 0
        self._wake: queue.SimpleQueue[bool] = queue.SimpleQueue()  # True: refreeze, False: stop
        self._woken = False
        self._lock = threading.Lock()
        self._busy = False
        self._thread: threading.Thread | None = None

    def freeze(self, reason: str) -> None:
        """Collect everything (frozen objects included) and freeze what is left."""
        with self._lock:
            self._busy = True
            try:
                started = time.perf_counter()
                gc.unfreeze()
                collected = gc.collect()
                gc.freeze()
                self.frozen = gc.get_freeze_count()
            finally:
                self._busy = False
        FREEZES.inc()
        FROZEN.set(self.frozen)
        log.info("gc_frozen", reason=reason, frozen=self.frozen, collected=collected,
                 seconds=round(time.perf_counter() - started, 3))

    def start(self) -> None:
        """Freeze now and watch the old generation from now on (idempotent: a later call freezes again,
        as a second set of caches has synced)."""
        self.freeze("caches synced")
        with self._lock:
            if self._thread is not None:
                return
            gc.callbacks.append(self._after_collection)
            self._thread = threading.Thread(target=self._run, name="gc-freezer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop watching and unfreeze (tests; a process that exits needs neither)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is None:
            return
        gc.callbacks.remove(self._after_collection)
        self._wake.put(False)
        thread.join()
        gc.unfreeze()
        self.frozen = 0

    def _after_collection(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info["generation"] != 2 or self._busy or self._woken:
            return
        if len(gc.get_objects(generation=2)) >= self.ratio * self.frozen:
            self._woken = True
            self._wake.put(True)

    def _run(self) -> None:
        while self._wake.get():
            self.freeze("old generation regrew")
            self._woken = False


_FREEZER = GcFreezer()


def freeze_now() -> GcFreezer:
    """Freeze the process's objects now and keep doing so as they are replaced: for long-running
    binaries (and benchmark drivers), once their informer caches have synced. Not inside pytest: objects
    frozen there and left in a cycle would be found only at the next refreeze."""
    _FREEZER.start()
    return _FREEZER


def freeze_after(parties: int) -> Callable[[], None]:
    """A callable that calls `freeze_now()` on its `parties`-th call, for a process whose caches sync
    in several managers (the operator's two): one full collection once all have synced, not one each.
    The calls may come from different threads."""
    lock = threading.Lock()
    left = [parties]

    def arrive() -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            freeze_now()

    return arrive
