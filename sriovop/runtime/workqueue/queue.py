"""The basic work queue: client-go's queue.go, with the same dirty/processing bookkeeping.

Why the three sets: `dirty` collapses repeated adds into one run, `processing` guarantees no item is
handled by two workers at once, and an add while processing marks the item dirty so `done` queues it
again - exactly one re-run, after the current one finishes.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from sriovop.runtime.workqueue.clock import REAL_CLOCK, Clock
from sriovop.runtime.workqueue.metrics import (
    NOOP_QUEUE_METRICS,
    MetricsProvider,
    QueueMetrics,
    default_metrics_provider,
)

T = TypeVar("T", bound=Hashable)

UNFINISHED_WORK_UPDATE_PERIOD = 0.5


class Queue(Generic[T]):
    """A FIFO of unique hashable items handed to workers one at a time.

    Usage::

        q: Queue[str] = Queue("my-controller")
        q.add("ns/name")
        item, shutdown = q.get()      # blocks; shutdown=True once shut down and empty
        if not shutdown:
            try:
                handle(item)
            finally:
                q.done(item)          # always: it releases the item for the next worker

    A named queue reports metrics through `metrics_provider` (default: prometheus-client's registry);
    an unnamed one (name="") reports nothing, as in client-go.
    """

    def __init__(
        self,
        name: str = "",
        *,
        controller: str | None = None,
        metrics_provider: MetricsProvider | None = None,
        clock: Clock = REAL_CLOCK,
        unfinished_work_update_period: float = UNFINISHED_WORK_UPDATE_PERIOD,
    ) -> None:
        self.name = name
        self._clock = clock
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._cond = threading.Condition(threading.Lock())
        self._waiters = 0  # get() calls blocked on _cond; lets add() skip notify when nobody waits
        self._shutting_down = False
        self._drain = False
        metrics: QueueMetrics = NOOP_QUEUE_METRICS
        if name:
            provider = metrics_provider if metrics_provider is not None else default_metrics_provider()
            metrics = provider.new_queue_metrics(name, controller if controller is not None else name, clock)
        self._metrics = metrics
        self._metrics_stop = threading.Event()
        self._metrics_cond = threading.Condition(threading.Lock())
        # Whether the next unfinished-work update can change the gauges: set when a worker takes an item,
        # cleared by an update that found nothing in process (it published the zeros). While clear, the
        # update loop sleeps without a timeout: an idle queue costs no wake-ups (a process with thousands
        # of queues, as a hollow fleet's daemons, would otherwise wake thousands of times a second).
        self._metrics_busy = False
        self._metrics_busy_since = 0.0
        self._metrics_thread: threading.Thread | None = None
        if metrics.enabled:
            self._metrics_thread = threading.Thread(
                target=self._update_unfinished_work_loop, args=(unfinished_work_update_period,),
                name=f"workqueue-metrics-{name}", daemon=True,
            )
            self._metrics_thread.start()

    # --- hooks -----------------------------------------------------------------------------------
    def touch(self, item: T) -> None:
        """Called when an already-queued item is added again; FIFO order ignores it (client-go Touch)."""

    # --- the queue -------------------------------------------------------------------------------
    def add(self, item: T) -> None:
        with self._cond:
            if self._shutting_down:
                return
            if item in self._dirty:
                if item not in self._processing:
                    self.touch(item)
                return
            self._metrics.add(item)
            self._dirty.add(item)
            if item in self._processing:
                return
            self._queue.append(item)
            if self._waiters:
                self._cond.notify()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def get(self) -> tuple[T | None, bool]:
        """The next item and False, or (None, True) once the queue is shut down and empty."""
        with self._cond:
            while not self._queue and not self._shutting_down:
                self._waiters += 1
                try:
                    self._cond.wait()
                finally:
                    self._waiters -= 1
            if not self._queue:
                return None, True
            item = self._queue.popleft()
            self._metrics.get(item)
            self._processing.add(item)
            self._dirty.discard(item)
            if self._metrics_thread is not None and not self._metrics_busy:
                with self._metrics_cond:
                    self._metrics_busy = True
                    self._metrics_busy_since = self._clock.now()
                    self._metrics_cond.notify()
            return item, False

    def done(self, item: T) -> None:
        with self._cond:
            self._metrics.done(item)
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                if self._waiters:
                    self._cond.notify()
            elif not self._processing and self._drain:
                self._cond.notify_all()

    def shutdown(self) -> None:
        """Stop accepting adds; workers drain what is queued, then get shutdown=True. Does not wait."""
        with self._cond:
            self._drain = False
            self._shutting_down = True
            self._cond.notify_all()
        self._stop_metrics()

    def shutdown_with_drain(self) -> None:
        """Like shutdown, then wait until every item handed out has been marked done.

        A concurrent `shutdown()` cancels the wait (client-go: it clears the drain flag).
        """
        with self._cond:
            self._drain = True
            self._shutting_down = True
            self._cond.notify_all()
            while self._processing and self._drain:
                self._cond.wait()
        self._stop_metrics()

    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    # --- metrics ---------------------------------------------------------------------------------
    def _stop_metrics(self) -> None:
        self._metrics_stop.set()
        with self._metrics_cond:
            self._metrics_cond.notify_all()
        thread = self._metrics_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _update_unfinished_work_loop(self, period: float) -> None:
        """client-go's update every `period` while items are in process; asleep while none has been
        since the last update (the gauges already read 0 then), until get() hands out an item."""
        next_tick = self._clock.now() + period
        while True:
            with self._metrics_cond:
                while not self._metrics_stop.is_set():
                    if not self._metrics_busy:
                        self._metrics_cond.wait()
                        # Due one period after the work started, however late this thread woke.
                        next_tick = self._metrics_busy_since + period
                        continue
                    if self._clock.now() >= next_tick:
                        break
                    self._clock.wait(self._metrics_cond, next_tick - self._clock.now())
            if self._metrics_stop.is_set():
                return
            next_tick = self._clock.now() + period
            with self._cond:
                if self._shutting_down:  # client-go: no unfinished-work update after shutdown
                    return
                self._metrics.update_unfinished_work()
                if not self._processing:
                    self._metrics_busy = False
