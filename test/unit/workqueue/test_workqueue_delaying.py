"""Ports of client-go util/workqueue delaying_queue_test.go (fake clock, no real delays)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from sriovop.runtime.workqueue import DelayingQueue, FakeClock
from test.support.poll import wait_for


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def q(clock: FakeClock) -> Iterator[DelayingQueue[str]]:
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    yield queue
    queue.shutdown()


def _settle(q: DelayingQueue[str]) -> None:
    """Give the waiting thread several chances to run, so 'nothing appeared' means something."""
    for _ in range(5):
        time.sleep(0.01)


def test_simple_queue(q: DelayingQueue[str], clock: FakeClock) -> None:
    q.add_after("foo", 0.050)
    _settle(q)
    assert len(q) == 0
    assert q.waiting_len() == 1

    clock.step(0.060)
    wait_for(lambda: len(q) == 1, what="foo to become ready")
    item, _ = q.get()
    assert item == "foo"
    q.done(item)

    clock.step(10)
    _settle(q)
    assert len(q) == 0
    assert q.waiting_len() == 0


def test_deduping_later_time_ignored(q: DelayingQueue[str], clock: FakeClock) -> None:
    q.add_after("foo", 0.050)
    q.add_after("foo", 0.070)
    assert q.waiting_len() == 1
    clock.step(0.060)
    wait_for(lambda: len(q) == 1, what="foo at its earlier time")
    item, _ = q.get()
    q.done(item)  # type: ignore[arg-type]
    clock.step(0.020)
    _settle(q)
    assert len(q) == 0


def test_deduping_earlier_time_wins(q: DelayingQueue[str], clock: FakeClock) -> None:
    q.add_after("foo", 0.050)
    q.add_after("foo", 0.030)
    assert q.waiting_len() == 1
    clock.step(0.040)
    wait_for(lambda: len(q) == 1, what="foo at the earlier time")
    item, _ = q.get()
    q.done(item)  # type: ignore[arg-type]
    clock.step(0.100)
    _settle(q)
    assert len(q) == 0
    assert q.waiting_len() == 0


def test_add_two_fire_early(q: DelayingQueue[str], clock: FakeClock) -> None:
    q.add_after("foo", 1.0)
    q.add_after("bar", 0.050)
    clock.step(0.060)
    wait_for(lambda: len(q) == 1, what="bar")
    assert q.get()[0] == "bar"
    q.done("bar")

    q.add_after("baz", 2.0)
    clock.step(1.0)
    wait_for(lambda: len(q) == 1, what="foo")
    assert q.get()[0] == "foo"
    q.done("foo")

    clock.step(2.0)
    wait_for(lambda: len(q) == 1, what="baz")
    assert q.get()[0] == "baz"
    q.done("baz")


def test_copy_shifting(q: DelayingQueue[str], clock: FakeClock) -> None:
    q.add_after("foo", 1.0)
    q.add_after("bar", 0.5)
    q.add_after("baz", 0.25)
    _settle(q)
    assert len(q) == 0
    clock.step(2.0)
    wait_for(lambda: len(q) == 3, what="all three")
    assert [q.get()[0] for _ in range(3)] == ["baz", "bar", "foo"]


def test_non_positive_delay_adds_now(q: DelayingQueue[str]) -> None:
    q.add_after("now", 0)
    q.add_after("before", -1)
    assert len(q) == 2


def test_shutdown_drops_waiting_items_and_ignores_new_ones(clock: FakeClock) -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("foo", 1.0)
    q.shutdown()
    q.add_after("bar", 0)
    clock.step(5)
    _settle(q)
    assert len(q) == 0
    assert q.get() == (None, True)


def test_real_clock_delay_is_honoured() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    try:
        start = time.monotonic()
        q.add_after("foo", 0.05)
        item, _ = q.get()
        assert item == "foo"
        assert time.monotonic() - start >= 0.05  # never early (a lower bound, not a speed claim)
    finally:
        q.shutdown()
