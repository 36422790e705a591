"""Work-queue metrics with controller-runtime's names, labels and client-go's semantics.

A provider hands each named queue a QueueMetrics; NoopMetricsProvider exists so benchmarks can measure
the queue alone, and so anonymous queues cost nothing. Semantics (client-go metrics.go):
depth +1 when an item becomes dirty and -1 on get; adds_total +1 when an item becomes dirty;
queue_duration from the first add to get; work_duration from get to done; unfinished/longest from the
ages of items being processed, refreshed by the queue every 500 ms; retries_total +1 per add_after.

Why a custom collector instead of prometheus_client Counter/Histogram objects: every queue operation
already runs under the queue's lock, so plain attribute arithmetic is safe there, whereas each
prometheus_client update takes its own lock. The collector turns the per-queue numbers into metric
families only when scraped, which keeps the queue's hot path several times cheaper.
"""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_left
from collections.abc import Hashable, Iterator
from typing import Protocol

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from sriovop.runtime.workqueue.clock import REAL_CLOCK, Clock

# controller-runtime: prometheus.ExponentialBuckets(10e-9, 10, 12).
DURATION_BUCKETS = tuple(1e-8 * 10**i for i in range(12))
_BUCKET_LABELS = [floatToGoString(b) for b in DURATION_BUCKETS] + ["+Inf"]

_HELP = {
    "workqueue_depth": "Current depth of workqueue",
    "workqueue_adds": "Total number of adds handled by workqueue",
    "workqueue_queue_duration_seconds": "How long in seconds an item stays in workqueue before being requested",
    "workqueue_work_duration_seconds": "How long in seconds processing an item from workqueue takes.",
    "workqueue_unfinished_work_seconds": (
        "How many seconds of work has been done that is in progress and hasn't been observed by "
        "work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads "
        "by observing the rate at which this increases."),
    "workqueue_longest_running_processor_seconds": (
        "How many seconds has the longest running processor for workqueue been running."),
    "workqueue_retries": ("Total number of retries handled by workqueue (items added with a non-zero "
                          "delay: rate-limited, RequeueAfter or AddAfter)"),
}


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


class _Histogram:
    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(DURATION_BUCKETS) + 1)  # the last one is +Inf
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(DURATION_BUCKETS, value)] += 1
        self.sum += value

    def merge(self, other: _Histogram) -> None:
        for i, n in enumerate(other.counts):
            self.counts[i] += n
        self.sum += other.sum


class _Stats:
    """One queue's numbers; mutated only under that queue's lock."""

    __slots__ = ("adds", "depth", "latency", "longest", "retries", "unfinished", "work")

    def __init__(self) -> None:
        self.adds = 0
        self.retries = 0
        self.depth = 0
        self.latency = _Histogram()
        self.work = _Histogram()
        self.unfinished = 0.0
        self.longest = 0.0


Labels = tuple[str, str]


class _WorkqueueCollector:
    """Exports every live queue's stats; counters of queues that are gone are kept so they never drop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[Labels, weakref.WeakSet[PrometheusQueueMetrics]] = {}
        self._retired: dict[Labels, _Stats] = {}

    def track(self, labels: Labels, metrics: PrometheusQueueMetrics) -> None:
        with self._lock:
            self._live.setdefault(labels, weakref.WeakSet()).add(metrics)
            self._retired.setdefault(labels, _Stats())
        weakref.finalize(metrics, self._retire, labels, metrics.stats)

    def _retire(self, labels: Labels, stats: _Stats) -> None:
        with self._lock:
            total = self._retired[labels]
            total.adds += stats.adds
            total.retries += stats.retries
            total.latency.merge(stats.latency)
            total.work.merge(stats.work)

    def describe(self) -> Iterator[Metric]:
        return self._families({})

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            snapshot: dict[Labels, list[_Stats]] = {
                labels: [self._retired[labels], *(m.stats for m in list(live))]
                for labels, live in self._live.items()
            }
        return self._families(snapshot)

    def _families(self, snapshot: dict[Labels, list[_Stats]]) -> Iterator[Metric]:
        depth = GaugeMetricFamily("workqueue_depth", _HELP["workqueue_depth"],
                                  labels=["name", "controller", "priority"])
        adds = CounterMetricFamily("workqueue_adds", _HELP["workqueue_adds"], labels=["name", "controller"])
        latency = HistogramMetricFamily("workqueue_queue_duration_seconds",
                                        _HELP["workqueue_queue_duration_seconds"],
                                        labels=["name", "controller"])
        work = HistogramMetricFamily("workqueue_work_duration_seconds", _HELP["workqueue_work_duration_seconds"],
                                     labels=["name", "controller"])
        unfinished = GaugeMetricFamily("workqueue_unfinished_work_seconds",
                                       _HELP["workqueue_unfinished_work_seconds"], labels=["name", "controller"])
        longest = GaugeMetricFamily("workqueue_longest_running_processor_seconds",
                                    _HELP["workqueue_longest_running_processor_seconds"],
                                    labels=["name", "controller"])
        retries = CounterMetricFamily("workqueue_retries", _HELP["workqueue_retries"],
                                      labels=["name", "controller"])
        for labels, parts in sorted(snapshot.items()):
            retired, live = parts[0], parts[1:]
            depth.add_metric([*labels, ""], float(sum(s.depth for s in live)))
            adds.add_metric(list(labels), float(sum(s.adds for s in parts)))
            retries.add_metric(list(labels), float(sum(s.retries for s in parts)))
            unfinished.add_metric(list(labels), sum(s.unfinished for s in live))
            longest.add_metric(list(labels), max((s.longest for s in live), default=0.0))
            for family, pick in ((latency, lambda s: s.latency), (work, lambda s: s.work)):
                merged = _Histogram()
                merged.merge(pick(retired))
                for s in live:
                    merged.merge(pick(s))
                cumulative, buckets = 0, []
                for bound, n in zip(_BUCKET_LABELS, merged.counts, strict=True):
                    cumulative += n
                    buckets.append((bound, float(cumulative)))
                family.add_metric(list(labels), buckets, merged.sum)
        yield from (depth, adds, latency, work, unfinished, longest, retries)


class PrometheusQueueMetrics:
    """client-go's defaultQueueMetrics; every method runs under the owning queue's lock."""

    enabled = True

    def __init__(self, clock: Clock) -> None:
        self._now = clock.now
        self.stats = _Stats()
        self._add_times: dict[Hashable, float] = {}
        self._processing_start: dict[Hashable, float] = {}

    def add(self, item: Hashable) -> None:
        stats = self.stats
        stats.adds += 1
        stats.depth += 1
        if item not in self._add_times:
            self._add_times[item] = self._now()

    def get(self, item: Hashable) -> None:
        self.stats.depth -= 1
        now = self._now()
        self._processing_start[item] = now
        started = self._add_times.pop(item, None)
        if started is not None:
            self.stats.latency.observe(now - started)

    def done(self, item: Hashable) -> None:
        started = self._processing_start.pop(item, None)
        if started is not None:
            self.stats.work.observe(self._now() - started)

    def retry(self) -> None:
        self.stats.retries += 1

    def update_unfinished_work(self) -> None:
        now = self._now()
        total = 0.0
        oldest = 0.0
        for started in self._processing_start.values():
            age = now - started
            total += age
            oldest = max(oldest, age)
        self.stats.unfinished = total
        self.stats.longest = oldest


_collectors_lock = threading.Lock()
_collectors: weakref.WeakKeyDictionary[CollectorRegistry, _WorkqueueCollector] = weakref.WeakKeyDictionary()


def _collector_for(registry: CollectorRegistry) -> _WorkqueueCollector:
    with _collectors_lock:
        found = _collectors.get(registry)
        if found is None:
            found = _collectors[registry] = _WorkqueueCollector()
            registry.register(found)
        return found


class PrometheusMetricsProvider:
    """Registers on `registry` (default: the process-wide prometheus_client REGISTRY), once per registry;
    queues with the same (name, controller) add up, as two controllers sharing a name would in Go."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self._collector = _collector_for(registry if registry is not None else REGISTRY)

    def new_queue_metrics(self, name: str, controller: str, clock: Clock = REAL_CLOCK) -> QueueMetrics:
        metrics = PrometheusQueueMetrics(clock)
        self._collector.track((name, controller), metrics)
        return metrics


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
