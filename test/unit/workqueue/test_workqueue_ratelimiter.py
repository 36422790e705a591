"""Ports of client-go util/workqueue default_rate_limiters_test.go and rate_limiting_queue_test.go."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from sriovop.runtime.workqueue import (
    BucketRateLimiter,
    FakeClock,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)

MS = 0.001


def test_item_exponential_failure_rate_limiter() -> None:
    limiter = ItemExponentialFailureRateLimiter(1 * MS, 1.0)
    assert [limiter.when("one") for _ in range(5)] == [1 * MS, 2 * MS, 4 * MS, 8 * MS, 16 * MS]
    assert limiter.num_requeues("one") == 5
    assert [limiter.when("two") for _ in range(2)] == [1 * MS, 2 * MS]
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 1 * MS


def test_item_exponential_failure_rate_limiter_overflow() -> None:
    limiter = ItemExponentialFailureRateLimiter(1 * MS, 1000.0)
    for _ in range(5):
        limiter.when("one")
    assert limiter.when("one") == 32 * MS
    for _ in range(1000):
        limiter.when("overflow1")
    assert limiter.when("overflow1") == 1000.0

    limiter = ItemExponentialFailureRateLimiter(60.0, 1000 * 3600.0)
    for _ in range(2):
        limiter.when("two")
    assert limiter.when("two") == 4 * 60.0
    for _ in range(1000):
        limiter.when("overflow2")
    assert limiter.when("overflow2") == 1000 * 3600.0


def test_item_exponential_clamps_past_double_range() -> None:
    limiter = ItemExponentialFailureRateLimiter(1e300, 5.0)
    for _ in range(1100):
        assert limiter.when("x") <= 5.0


def test_controller_defaults_from_reference() -> None:
    limiter = ItemExponentialFailureRateLimiter(5 * MS, 1000.0)
    delays = [limiter.when("x") for _ in range(20)]
    assert delays[:4] == [5 * MS, 10 * MS, 20 * MS, 40 * MS]
    assert delays[17] == pytest.approx(5 * MS * 2**17)  # failure 18: ~655 s
    assert delays[18] == delays[19] == 1000.0  # failure 19 on: capped


def test_item_fast_slow_rate_limiter() -> None:
    limiter = ItemFastSlowRateLimiter(5 * MS, 10.0, 3)
    assert [limiter.when("one") for _ in range(5)] == [5 * MS, 5 * MS, 5 * MS, 10.0, 10.0]
    assert limiter.num_requeues("one") == 5
    assert [limiter.when("two") for _ in range(2)] == [5 * MS, 5 * MS]
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 5 * MS


def test_max_of_rate_limiter() -> None:
    limiter = MaxOfRateLimiter(
        ItemFastSlowRateLimiter(5 * MS, 3.0, 3),
        ItemExponentialFailureRateLimiter(1 * MS, 1.0),
    )
    assert [limiter.when("one") for _ in range(5)] == [5 * MS, 5 * MS, 5 * MS, 3.0, 3.0]
    assert limiter.num_requeues("one") == 5
    assert [limiter.when("two") for _ in range(2)] == [5 * MS, 5 * MS]
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 5 * MS


class _StepLimiter:
    """Returns 5 ms for the first 100 calls, then 1000 s (client-go's test limiter)."""

    def __init__(self) -> None:
        self.calls = 0

    def when(self, item: Hashable) -> float:
        self.calls += 1
        return 5 * MS if self.calls <= 100 else 1000.0

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return self.calls


def test_with_max_wait_rate_limiter() -> None:
    limiter = WithMaxWaitRateLimiter(_StepLimiter(), 500.0)
    for _ in range(100):
        assert limiter.when("x") == 5 * MS
    assert limiter.when("x") == 500.0


def test_bucket_rate_limiter_shares_budget_across_items() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert all(limiter.when(f"item-{i}") == 0 for i in range(100))
    assert limiter.when("a") == pytest.approx(0.1)
    assert limiter.when("b") == pytest.approx(0.2)
    assert limiter.num_requeues("a") == 0
    limiter.forget("a")  # no effect on a shared bucket
    clock.step(1.0)  # 10 tokens accrue; 2 were owed
    assert limiter.when("c") == 0
    for _ in range(7):
        limiter.when("c")
    assert limiter.when("c") == pytest.approx(0.1)


def test_bucket_rate_limiter_refills_to_burst_only() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=1, burst=2, clock=clock)
    clock.step(3600)
    assert [limiter.when("x") for _ in range(3)] == [0, 0, pytest.approx(1.0)]


def test_default_controller_rate_limiter() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock)
    assert limiter.when("x") == 5 * MS
    assert limiter.when("x") == 10 * MS
    assert limiter.num_requeues("x") == 2
    for i in range(98):
        limiter.when(f"other-{i}")
    # 100 tokens spent: the bucket now dominates a fresh item's 5 ms.
    assert limiter.when("fresh") == pytest.approx(0.1)
    limiter.forget("x")
    assert limiter.num_requeues("x") == 0
    assert default_item_based_rate_limiter().when("y") == 1 * MS


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: ItemExponentialFailureRateLimiter(-1, 1), "base_delay"),
        (lambda: BucketRateLimiter(qps=0, burst=1), "qps"),
        (lambda: BucketRateLimiter(qps=1, burst=0), "burst"),
        (lambda: ItemFastSlowRateLimiter(1, 1, -1), "max_fast_attempts"),
        (lambda: MaxOfRateLimiter(), "at least one"),
    ],
)
def test_bad_limiter_settings_name_the_field(factory: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        factory()  # type: ignore[operator]


class _RecordingQueue(RateLimitingQueue[str]):
    def __init__(self) -> None:
        super().__init__(rate_limiter=ItemExponentialFailureRateLimiter(1 * MS, 1.0), clock=FakeClock())
        self.delays: list[tuple[str, float]] = []

    def add_after(self, item: str, delay: float) -> None:
        self.delays.append((item, delay))
        super().add_after(item, delay)


def test_rate_limiting_queue() -> None:
    q = _RecordingQueue()
    try:
        q.add_rate_limited("one")
        q.add_rate_limited("one")
        assert q.delays == [("one", 1 * MS), ("one", 2 * MS)]
        assert q.num_requeues("one") == 2

        q.add_rate_limited("two")
        q.add_rate_limited("two")
        assert q.delays[2:] == [("two", 1 * MS), ("two", 2 * MS)]
        assert q.num_requeues("two") == 2

        q.forget("one")
        assert q.num_requeues("one") == 0
        q.add_rate_limited("one")
        assert q.delays[-1] == ("one", 1 * MS)
    finally:
        q.shutdown()


def test_forget_does_not_remove_from_queue() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue()
    try:
        q.add("x")
        q.forget("x")
        assert len(q) == 1
    finally:
        q.shutdown()
