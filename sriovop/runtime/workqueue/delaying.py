"""DelayingQueue: client-go's delaying_queue.go - items become ready after a delay.

One background thread owns a min-heap of ready times; `add_after` of an item already waiting keeps the
earlier ready time (so a short RequeueAfter is never postponed by a later, longer one).
"""

from __future__ import annotations

import heapq
import itertools
import threading
from dataclasses import dataclass, field
from typing import Generic

from sriovop.runtime.workqueue.clock import REAL_CLOCK, Clock
from sriovop.runtime.workqueue.metrics import MetricsProvider
from sriovop.runtime.workqueue.queue import UNFINISHED_WORK_UPDATE_PERIOD, Queue, T

# client-go wakes at least this often even with nothing due, so a missed notification self-heals.
HEARTBEAT = 10.0


@dataclass(order=True, slots=True)
class _Waiting(Generic[T]):
    ready_at: float
    seq: int
    item: T = field(compare=False)
    live: bool = field(default=True, compare=False)


class DelayingQueue(Queue[T]):
    """A Queue with `add_after(item, seconds)`.

    Usage::

        q: DelayingQueue[str] = DelayingQueue("my-controller")
        q.add_after("ns/name", 5.0)   # ready in 5 s; an earlier add_after for the same item wins
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
        super().__init__(name, controller=controller, metrics_provider=metrics_provider, clock=clock,
                         unfinished_work_update_period=unfinished_work_update_period)
        self._heap: list[_Waiting[T]] = []
        self._waiting: dict[T, _Waiting[T]] = {}
        self._seq = itertools.count()
        self._delay_cond = threading.Condition(threading.Lock())
        self._delay_stop = False
        self._delay_thread = threading.Thread(target=self._waiting_loop, name=f"workqueue-delay-{name}",
                                              daemon=True)
        self._delay_thread.start()

    def add_after(self, item: T, delay: float) -> None:
        """Add `item` once `delay` seconds have passed; <= 0 adds now. Counted as a retry in metrics."""
        with self._cond:
            if self._shutting_down:
                return
            self._metrics.retry()  # under the queue lock, like every other metrics update
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._clock.now() + delay
        with self._delay_cond:
            if self._delay_stop:
                return
            current = self._waiting.get(item)
            if current is not None:
                if current.ready_at <= ready_at:
                    return
                current.live = False  # lazily dropped when it reaches the top of the heap
            entry = _Waiting(ready_at, next(self._seq), item)
            self._waiting[item] = entry
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._delay_cond.notify()

    def waiting_len(self) -> int:
        """Items waiting for their delay to pass (not yet in the queue); for tests and introspection."""
        with self._delay_cond:
            return len(self._waiting)

    def shutdown(self) -> None:
        self._stop_waiting()
        super().shutdown()

    def shutdown_with_drain(self) -> None:
        self._stop_waiting()
        super().shutdown_with_drain()

    def _stop_waiting(self) -> None:
        with self._delay_cond:
            self._delay_stop = True
            self._delay_cond.notify_all()
        if self._delay_thread is not threading.current_thread():
            self._delay_thread.join()

    def _waiting_loop(self) -> None:
        while True:
            ready: list[T] = []
            with self._delay_cond:
                if self._delay_stop:
                    return  # items still waiting are dropped, as in client-go
                now = self._clock.now()
                heap = self._heap
                while heap and heap[0].ready_at <= now:
                    entry = heapq.heappop(heap)
                    if entry.live:
                        del self._waiting[entry.item]
                        ready.append(entry.item)
                if not ready:
                    timeout = HEARTBEAT if not heap else min(HEARTBEAT, heap[0].ready_at - now)
                    self._clock.wait(self._delay_cond, timeout)
                    continue
            for item in ready:
                self.add(item)
