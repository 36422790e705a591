"""Python's garbage-collector pauses as a histogram, as a Go controller exports `go_gc_duration_seconds`.

Why: a collection stops every thread of the process, and a full one walks every tracked object, so
its length grows with what the informer caches hold (sriovop.runtime.gcfreeze). Request latencies
show such a pause only as an unexplained tail; this histogram names it.

The timer is a `gc.callbacks` hook, which runs wherever a collection starts, in any thread, possibly
while that thread holds a lock, including the lock of a prometheus-client metric. So the hook takes
no lock and touches no metric: it adds to plain lists under the GIL, and a collector turns them into
`sriovop_gc_pause_seconds{generation}` when /metrics is scraped.
"""

from __future__ import annotations

import bisect
import gc
import threading
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector

__all__ = ["BUCKETS", "GcPauses", "install"]

NAME = "sriovop_gc_pause_seconds"
#: Young collections take well under a millisecond; a full one over a large cache, 0.1 s and more.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
GENERATIONS = 3


class GcPauses(Collector):
    """Counts of collections by generation and bucket, and their summed seconds."""

    def __init__(self) -> None:
        self.counts = [[0] * (len(BUCKETS) + 1) for _ in range(GENERATIONS)]
        self.sums = [0.0] * GENERATIONS
        self._started = 0.0

    def callback(self, phase: str, info: dict[str, Any]) -> None:
        """The `gc.callbacks` hook (collections never nest, so one start time is enough)."""
        if phase == "start":
            self._started = time.perf_counter()
            return
        took = time.perf_counter() - self._started
        generation = info["generation"]
        self.sums[generation] += took
        self.counts[generation][bisect.bisect_left(BUCKETS, took)] += 1

    def collect(self) -> Iterator[HistogramMetricFamily]:
        family = HistogramMetricFamily(NAME, "Time each garbage collection stopped the process, by generation "
                                             "(2: a full collection)", labels=["generation"])
        bounds = [*(repr(b) for b in BUCKETS), "+Inf"]
        for generation in range(GENERATIONS):
            total, buckets = 0, []
            for bound, count in zip(bounds, list(self.counts[generation]), strict=True):
                total += count
                buckets.append((bound, total))
            family.add_metric([str(generation)], buckets, self.sums[generation])
        yield family


_lock = threading.Lock()
_installed: GcPauses | None = None


def install(registry: CollectorRegistry = REGISTRY) -> GcPauses:
    """Time every collection of this process from now on (once per process; later calls return the same)."""
    global _installed
    with _lock:
        if _installed is None:
            _installed = GcPauses()
            registry.register(_installed)
            gc.callbacks.append(_installed.callback)
        return _installed
