"""RateLimitingQueue: a DelayingQueue whose retries are spaced by a RateLimiter.

Worker pattern (client-go): on success `forget` then `done`; on a transient error `add_rate_limited`
then `done`; when giving up `forget` then `done`.
"""

from __future__ import annotations

from sriovop.runtime.workqueue.clock import REAL_CLOCK, Clock
from sriovop.runtime.workqueue.delaying import DelayingQueue
from sriovop.runtime.workqueue.metrics import MetricsProvider
from sriovop.runtime.workqueue.queue import UNFINISHED_WORK_UPDATE_PERIOD, T
from sriovop.runtime.workqueue.ratelimiter import RateLimiter, default_controller_rate_limiter


class RateLimitingQueue(DelayingQueue[T]):
    """Usage::

        q: RateLimitingQueue[str] = RateLimitingQueue("my-controller")   # default controller limiter
        item, shutdown = q.get()
        try:
            reconcile(item)
            q.forget(item)
        except Exception:
            q.add_rate_limited(item)
        finally:
            q.done(item)
    """

    def __init__(
        self,
        name: str = "",
        rate_limiter: RateLimiter | None = None,
        *,
        controller: str | None = None,
        metrics_provider: MetricsProvider | None = None,
        clock: Clock = REAL_CLOCK,
        unfinished_work_update_period: float = UNFINISHED_WORK_UPDATE_PERIOD,
    ) -> None:
        super().__init__(name, controller=controller, metrics_provider=metrics_provider, clock=clock,
                         unfinished_work_update_period=unfinished_work_update_period)
        self.rate_limiter: RateLimiter = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock)
        )

    def add_rate_limited(self, item: T) -> None:
        """Add `item` after the limiter's delay for it (which also counts this failure)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Clear the item's failure history; it stays in the queue if it is there."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)
