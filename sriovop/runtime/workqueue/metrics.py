"""Work-queue metrics with controller-runtime's names, labels and client-go's semantics.

A provider hands each named queue a QueueMetrics; NoopMetricsProvider exists so benchmarks can measure
the queue alone, and so anonymous queues cost nothing. Semantics (client-go metrics.go):
depth +1 when an item becomes dirty and -1 on get; adds_total +1 when an item becomes dirty;
queue_duration from the first add to get; work_duration from get to done; unfinished/longest from the
ages of items being processed, refreshed by the queue every 500 ms; retries_total +1 per add_after.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Protocol

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from sriovop.runtime.workqueue.clock import REAL_CLOCK, Clock

# controller-runtime: prometheus.ExponentialBuckets(10e-9, 10, 12).
DURATION_BUCKETS = tuple(1e-8 * 10**i for i in range(12))


class QueueMetrics(Protocol):
    enabled: bool

    def add(self, item: Hashable) -> None: ...
    def get(self, item: Hashable) -> None: ...
    def done(self, item: Hashable) -> None: ...
    def retry(self) -> None: ...
    def update_unfinished_work(self) -> None: ...


class MetricsProvider(Protocol):
    def new_queue_metrics(self, name: str, controller: str, clock: Clock) -> QueueMetrics: ...


class _NoopQueueMetrics:
    enabled = False

    def add(self, item: Hashable) -> None:
        pass

    def get(self, item: Hashable) -> None:
        pass

    def done(self, item: Hashable) -> None:
        pass

    def retry(self) -> None:
        pass

    def update_unfinished_work(self) -> None:
        pass


NOOP_QUEUE_METRICS = _NoopQueueMetrics()


class NoopMetricsProvider:
    def new_queue_metrics(self, name: str, controller: str, clock: Clock) -> QueueMetrics:
        return NOOP_QUEUE_METRICS


class _Collectors:
    """The seven metric families, registered once per registry (two managers share them by label)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ("name", "controller")
        self.depth = Gauge("workqueue_depth", "Current depth of workqueue",
                           (*labels, "priority"), registry=registry)
        self.adds = Counter("workqueue_adds", "Total number of adds handled by workqueue",
                            labels, registry=registry)
        self.latency = Histogram("workqueue_queue_duration_seconds",
                                 "How long in seconds an item stays in workqueue before being requested",
                                 labels, buckets=DURATION_BUCKETS, registry=registry)
        self.work_duration = Histogram("workqueue_work_duration_seconds",
                                       "How long in seconds processing an item from workqueue takes.",
                                       labels, buckets=DURATION_BUCKETS, registry=registry)
        self.unfinished = Gauge("workqueue_unfinished_work_seconds",
                                "How many seconds of work has been done that is in progress and hasn't "
                                "been observed by work_duration. Large values indicate stuck threads. "
                                "One can deduce the number of stuck threads by observing the rate at "
                                "which this increases.", labels, registry=registry)
        self.longest = Gauge("workqueue_longest_running_processor_seconds",
                             "How many seconds has the longest running processor for workqueue been "
                             "running.", labels, registry=registry)
        self.retries = Counter("workqueue_retries",
                               "Total number of retries handled by workqueue (items added with a "
                               "non-zero delay: rate-limited, RequeueAfter or AddAfter)",
                               labels, registry=registry)


_collectors_lock = threading.Lock()
_collectors: dict[int, _Collectors] = {}


def _collectors_for(registry: CollectorRegistry) -> _Collectors:
    with _collectors_lock:
        found = _collectors.get(id(registry))
        if found is None:
            found = _collectors[id(registry)] = _Collectors(registry)
        return found


class PrometheusQueueMetrics:
    enabled = True

    def __init__(self, collectors: _Collectors, name: str, controller: str, clock: Clock) -> None:
        self._clock = clock
        self._depth = collectors.depth.labels(name, controller, "")
        self._adds = collectors.adds.labels(name, controller)
        self._latency = collectors.latency.labels(name, controller)
        self._work = collectors.work_duration.labels(name, controller)
        self._unfinished = collectors.unfinished.labels(name, controller)
        self._longest = collectors.longest.labels(name, controller)
        self._retries = collectors.retries.labels(name, controller)
        # Guarded by the queue's own lock: the queue calls add/get/done while holding it.
        self._add_times: dict[Hashable, float] = {}
        self._processing_start: dict[Hashable, float] = {}

    def add(self, item: Hashable) -> None:
        self._adds.inc()
        self._depth.inc()
        if item not in self._add_times:
            self._add_times[item] = self._clock.now()

    def get(self, item: Hashable) -> None:
        self._depth.dec()
        now = self._clock.now()
        self._processing_start[item] = now
        started = self._add_times.pop(item, None)
        if started is not None:
            self._latency.observe(now - started)

    def done(self, item: Hashable) -> None:
        started = self._processing_start.pop(item, None)
        if started is not None:
            self._work.observe(self._clock.now() - started)

    def retry(self) -> None:
        self._retries.inc()

    def update_unfinished_work(self) -> None:
        now = self._clock.now()
        total = 0.0
        oldest = 0.0
        for started in list(self._processing_start.values()):
            age = now - started
            total += age
            oldest = max(oldest, age)
        self._unfinished.set(total)
        self._longest.set(oldest)


class PrometheusMetricsProvider:
    """Registers on `registry` (default: the process-wide prometheus_client REGISTRY)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self._collectors = _collectors_for(registry if registry is not None else REGISTRY)

    def new_queue_metrics(self, name: str, controller: str, clock: Clock = REAL_CLOCK) -> QueueMetrics:
        return PrometheusQueueMetrics(self._collectors, name, controller, clock)


_default_provider: MetricsProvider | None = None


def default_metrics_provider() -> MetricsProvider:
    """The provider named queues use unless told otherwise (created lazily: importing registers nothing)."""
    global _default_provider
    if _default_provider is None:
        _default_provider = PrometheusMetricsProvider()
    return _default_provider


def set_default_metrics_provider(provider: MetricsProvider) -> None:
    global _default_provider
    _default_provider = provider
