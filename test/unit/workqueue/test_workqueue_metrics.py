"""Ports of client-go util/workqueue metrics_test.go, read back through a private Prometheus registry."""

from __future__ import annotations

import gc

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from sriovop.runtime.workqueue import (
    DelayingQueue,
    FakeClock,
    NoopMetricsProvider,
    PrometheusMetricsProvider,
    Queue,
    RateLimitingQueue,
)
from test.support.poll import wait_for

LABELS = {"name": "test", "controller": "test"}


def _value(registry: CollectorRegistry, metric: str, **extra: str) -> float:
    value = registry.get_sample_value(metric, {**LABELS, **extra})
    assert value is not None, f"{metric} not exported"
    return value


def test_metrics() -> None:
    registry = CollectorRegistry()
    clock = FakeClock()
    q: Queue[str] = Queue("test", metrics_provider=PrometheusMetricsProvider(registry), clock=clock,
                          unfinished_work_update_period=0.001)
    try:
        q.add("foo")
        assert _value(registry, "workqueue_adds_total") == 1
        assert _value(registry, "workqueue_depth", priority="") == 1

        clock.step(50e-6)
        item, _ = q.get()
        assert item == "foo"
        assert _value(registry, "workqueue_queue_duration_seconds_count") == 1
        assert _value(registry, "workqueue_queue_duration_seconds_sum") == pytest.approx(5e-5)

        for _ in range(5):
            q.add("foo")  # while processing: becomes dirty once
        assert _value(registry, "workqueue_adds_total") == 2
        assert _value(registry, "workqueue_depth", priority="") == 1

        clock.step(25e-6)
        q.done("foo")
        assert _value(registry, "workqueue_work_duration_seconds_count") == 1
        assert _value(registry, "workqueue_work_duration_seconds_sum") == pytest.approx(2.5e-5)
        assert _value(registry, "workqueue_depth", priority="") == 1

        item, _ = q.get()
        assert item == "foo"
        assert _value(registry, "workqueue_queue_duration_seconds_count") == 2
        assert _value(registry, "workqueue_queue_duration_seconds_sum") == pytest.approx(5e-5 + 2.5e-5)

        clock.step(0.001)
        wait_for(lambda: _value(registry, "workqueue_unfinished_work_seconds") == pytest.approx(0.001),
                 what="unfinished work update")
        assert _value(registry, "workqueue_longest_running_processor_seconds") == pytest.approx(0.001)

        q.done("foo")
        assert _value(registry, "workqueue_work_duration_seconds_count") == 2
        assert _value(registry, "workqueue_work_duration_seconds_sum") == pytest.approx(2.5e-5 + 0.001)
    finally:
        q.shutdown()


def test_metric_shutdown() -> None:
    registry = CollectorRegistry()
    clock = FakeClock()
    q: Queue[str] = Queue("test", metrics_provider=PrometheusMetricsProvider(registry), clock=clock,
                          unfinished_work_update_period=0.001)
    q.add("foo")
    q.get()
    q.shutdown()
    clock.step(5)
    assert _value(registry, "workqueue_unfinished_work_seconds") == 0
    assert _value(registry, "workqueue_longest_running_processor_seconds") == 0


def test_retries_counted_per_add_after_call() -> None:
    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry)
    q: RateLimitingQueue[str] = RateLimitingQueue("test", metrics_provider=provider, clock=FakeClock())
    try:
        q.add_after("a", 1.0)
        q.add_after("a", 2.0)  # deduplicated, but still a retry
        q.add_rate_limited("b")
        assert _value(registry, "workqueue_retries_total") == 3
    finally:
        q.shutdown()


def test_histogram_buckets_match_controller_runtime() -> None:
    registry = CollectorRegistry()
    q: Queue[str] = Queue("test", metrics_provider=PrometheusMetricsProvider(registry))
    try:
        q.add("a")
        q.get()
        q.done("a")
        bounds = [s.labels["le"] for m in registry.collect() if m.name == "workqueue_work_duration_seconds"
                  for s in m.samples if s.name.endswith("_bucket")]
        assert bounds[0] == "1e-08" and bounds[-2] == "1000.0" and len(bounds) == 13
    finally:
        q.shutdown()


def test_controller_label_and_shared_registry() -> None:
    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry)
    a: Queue[str] = Queue("a", controller="ctl-a", metrics_provider=provider)
    b: Queue[str] = Queue("b", metrics_provider=PrometheusMetricsProvider(registry))
    try:
        a.add("x")
        b.add("x")
        b.add("y")
        assert registry.get_sample_value("workqueue_adds_total", {"name": "a", "controller": "ctl-a"}) == 1
        assert registry.get_sample_value("workqueue_adds_total", {"name": "b", "controller": "b"}) == 2
    finally:
        a.shutdown()
        b.shutdown()


def test_noop_provider_and_unnamed_queue_start_no_metrics_thread() -> None:
    named: DelayingQueue[str] = DelayingQueue("quiet", metrics_provider=NoopMetricsProvider())
    unnamed: Queue[str] = Queue()
    try:
        assert named._metrics_thread is None
        assert unnamed._metrics_thread is None
    finally:
        named.shutdown()
        unnamed.shutdown()


def test_counters_survive_a_queue_being_garbage_collected() -> None:
    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry)
    old: Queue[str] = Queue("same", metrics_provider=provider)
    old.add("a")
    old.add("b")
    old.get()
    old.shutdown()
    del old
    gc.collect()
    labels = {"name": "same", "controller": "same"}
    assert registry.get_sample_value("workqueue_adds_total", labels) == 2
    assert registry.get_sample_value("workqueue_queue_duration_seconds_count", labels) == 1
    assert registry.get_sample_value("workqueue_depth", {**labels, "priority": ""}) == 0  # gone with it
    new: Queue[str] = Queue("same", metrics_provider=provider)
    try:
        new.add("c")
        assert registry.get_sample_value("workqueue_adds_total", labels) == 3
        assert registry.get_sample_value("workqueue_depth", {**labels, "priority": ""}) == 1
    finally:
        new.shutdown()


def test_text_exposition_uses_controller_runtime_names() -> None:
    registry = CollectorRegistry()
    q: Queue[str] = Queue("expo", metrics_provider=PrometheusMetricsProvider(registry))
    try:
        q.add("a")
        q.get()
        q.done("a")
        text = generate_latest(registry).decode()
    finally:
        q.shutdown()
    for name in ("workqueue_depth", "workqueue_adds_total", "workqueue_queue_duration_seconds_bucket",
                 "workqueue_work_duration_seconds_count", "workqueue_unfinished_work_seconds",
                 "workqueue_longest_running_processor_seconds", "workqueue_retries_total"):
        assert f'\n{name}{{' in text, name
    assert 'workqueue_adds_total{controller="expo",name="expo"} 1.0' in text
