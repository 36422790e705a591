"""Work queues after client-go's util/workqueue: basic, delaying and rate-limiting queues.

    from sriovop.runtime.workqueue import RateLimitingQueue, default_controller_rate_limiter
"""

from sriovop.runtime.workqueue.clock import REAL_CLOCK, Clock, FakeClock, RealClock
from sriovop.runtime.workqueue.delaying import DelayingQueue
from sriovop.runtime.workqueue.metrics import (
    MetricsProvider,
    NoopMetricsProvider,
    PrometheusMetricsProvider,
    QueueMetrics,
    default_metrics_provider,
    set_default_metrics_provider,
)
from sriovop.runtime.workqueue.queue import Queue
from sriovop.runtime.workqueue.ratelimiter import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from sriovop.runtime.workqueue.ratelimiting import RateLimitingQueue

__all__ = [
    "REAL_CLOCK",
    "BucketRateLimiter",
    "Clock",
    "DelayingQueue",
    "FakeClock",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "MetricsProvider",
    "NoopMetricsProvider",
    "PrometheusMetricsProvider",
    "Queue",
    "QueueMetrics",
    "RateLimiter",
    "RateLimitingQueue",
    "RealClock",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
    "default_metrics_provider",
    "set_default_metrics_provider",
]
