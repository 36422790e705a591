"""Work-queue throughput: add→get→done cycles per second, printed as JSON.

Scenarios, each with the queue's Prometheus metrics on and with the no-op provider:
  inline     one thread does add, get, done in turn (the queue's own cost);
  workers_1  one producer thread adds N distinct items while 1 worker thread gets and dones them;
  workers_4  the same with 4 worker threads (the GIL means this measures contention, not parallelism).
Baseline measured in the same run: the stdlib queue.Queue doing put→get→task_done the same way.
Each figure is given per wall second (what the target is about) and per CPU second of this process
(less sensitive to other load on a shared machine; the 1-minute load average is printed too).

    .venv/bin/python test/bench/workqueue_bench.py [--items 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import queue as stdlib_queue
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from prometheus_client import CollectorRegistry

from sriovop.runtime.workqueue import NoopMetricsProvider, PrometheusMetricsProvider, Queue
from sriovop.runtime.workqueue.metrics import MetricsProvider


def _provider(metrics: bool) -> MetricsProvider:
    return PrometheusMetricsProvider(CollectorRegistry()) if metrics else NoopMetricsProvider()


Rates = tuple[float, float]  # (per wall second, per CPU second of this process)


class _Timer:
    def __enter__(self) -> _Timer:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu

    def rates(self, n: int) -> Rates:
        return n / self.wall, n / max(self.cpu, 1e-9)


def inline(n: int, metrics: bool) -> Rates:
    q: Queue[int] = Queue("bench", metrics_provider=_provider(metrics))
    add, get, done = q.add, q.get, q.done
    with _Timer() as t:
        for i in range(n):
            add(i)
            item, _ = get()
            done(item)  # type: ignore[arg-type]
    q.shutdown()
    return t.rates(n)


def with_workers(n: int, workers: int, metrics: bool) -> Rates:
    q: Queue[int] = Queue("bench", metrics_provider=_provider(metrics))
    counts = [0] * workers

    def work(slot: int) -> None:
        get, done = q.get, q.done
        handled = 0
        while True:
            item, shutdown = get()
            if shutdown:
                counts[slot] = handled
                return
            done(item)  # type: ignore[arg-type]
            handled += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    with _Timer() as timer:
        for t in threads:
            t.start()
        add = q.add
        for i in range(n):
            add(i)
        q.shutdown()  # workers drain what is queued, then exit
        for t in threads:
            t.join()
    assert sum(counts) == n, (sum(counts), n)
    return timer.rates(n)


def stdlib_inline(n: int) -> Rates:
    q: stdlib_queue.Queue[int] = stdlib_queue.Queue()
    with _Timer() as t:
        for i in range(n):
            q.put(i)
            q.get()
            q.task_done()
    return t.rates(n)


def stdlib_workers(n: int, workers: int) -> Rates:
    q: stdlib_queue.Queue[int | None] = stdlib_queue.Queue()

    def work() -> None:
        while True:
            item = q.get()
            q.task_done()
            if item is None:
                return

    threads = [threading.Thread(target=work) for _ in range(workers)]
    with _Timer() as timer:
        for t in threads:
            t.start()
        for i in range(n):
            q.put(i)
        for _ in threads:
            q.put(None)
        for t in threads:
            t.join()
    return timer.rates(n)


def measure(fn: Callable[[], Rates], repeat: int) -> dict[str, float]:
    runs = [fn() for _ in range(repeat)]
    wall = [w for w, _ in runs]
    cpu = [c for _, c in runs]
    return {"median_per_s": round(statistics.median(wall)), "best_per_s": round(max(wall)),
            "median_per_cpu_s": round(statistics.median(cpu))}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, r = args.items, args.repeat

    results: dict[str, object] = {"items": n, "repeat": r, "python": sys.version.split()[0],
                                  "cpus": os.cpu_count(), "load_avg_1m_before": os.getloadavg()[0]}
    baseline = {
        "inline": measure(lambda: stdlib_inline(n), r),
        "workers_1": measure(lambda: stdlib_workers(n, 1), r),
        "workers_4": measure(lambda: stdlib_workers(n, 4), r),
    }
    results["baseline_stdlib_queue"] = baseline
    for metrics in (False, True):
        label = "metrics_on" if metrics else "metrics_off"
        scenario = {
            "inline": measure(lambda m=metrics: inline(n, m), r),  # type: ignore[misc]
            "workers_1": measure(lambda m=metrics: with_workers(n, 1, m), r),  # type: ignore[misc]
            "workers_4": measure(lambda m=metrics: with_workers(n, 4, m), r),  # type: ignore[misc]
        }
        for name, figures in scenario.items():
            figures["ratio_to_stdlib"] = round(figures["median_per_s"] / baseline[name]["median_per_s"], 2)
            figures["ratio_to_stdlib_cpu"] = round(
                figures["median_per_cpu_s"] / baseline[name]["median_per_cpu_s"], 2)
        results[label] = scenario
    single = results["metrics_on"]["workers_1"]["median_per_s"]  # type: ignore[index]
    results["load_avg_1m_after"] = os.getloadavg()[0]
    results["target_single_worker_per_s"] = 100_000
    results["target_met_with_metrics_on"] = single >= 100_000
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
