"""The read-your-writes barrier of the webhook's informer view, with fake stores (no API server).

Each store stands for one informer; its `resource_version` is what that informer last applied and its
length how many objects it holds. Each read stands for the LIST of one kind: consistent for the
first kind (called with None), at the first kind's resourceVersion for the others."""

from __future__ import annotations

import threading
import time

import pytest

from sriovop.webhook.freshness import FreshnessBarrier, ServerState


class FakeStore:
    def __init__(self, rv: str, count: int = 0) -> None:
        self.resource_version = rv
        self.count = count

    def __len__(self) -> int:
        return self.count


def at(rv: str, count: int | None = None) -> ServerState:
    return ServerState(rv, count)


def test_waits_until_a_lagging_cache_applies_the_current_resource_version() -> None:
    store = FakeStore("10")
    barrier = FreshnessBarrier([(lambda _at: at("20"), store)], settle=5.0, timeout=10.0)

    def catch_up() -> None:  # as an informer does: apply, then its handler announces the move
        time.sleep(0.05)
        store.resource_version = "15"  # an event in flight: not yet there
        barrier.note_change()
        time.sleep(0.05)
        store.resource_version = "20"
        barrier.note_change()

    threading.Thread(target=catch_up).start()
    started = time.monotonic()
    barrier.wait()
    assert store.resource_version == "20"
    assert time.monotonic() - started < 5.0  # released by reaching R, not by the settle time


def test_a_store_that_moves_unannounced_is_seen_once_the_settle_time_is_up() -> None:
    # A bookmark moves a store's resourceVersion without an event: no handler announces it, and the
    # round sees it at its next look, which the settle time bounds.
    store = FakeStore("10", count=1)
    barrier = FreshnessBarrier([(lambda _at: at("20", 2), store)], settle=0.2, timeout=30.0)

    def bookmark() -> None:
        time.sleep(0.05)
        store.resource_version = "20"

    threading.Thread(target=bookmark).start()
    started = time.monotonic()
    barrier.wait()  # the count stays short (1 of 2): only reaching R releases it
    assert store.resource_version == "20"
    assert time.monotonic() - started < 10.0


def test_a_round_sleeps_between_looks_instead_of_polling() -> None:
    # An idle kind (R not reached, count right) is released by the settle time: one look before the
    # sleep and one after it, not one per poll interval.
    looks = []

    class CountingStore(FakeStore):
        def __getattribute__(self, name: str) -> object:
            if name == "resource_version":
                looks.append(1)
            return super().__getattribute__(name)

    barrier = FreshnessBarrier([(lambda _at: at("20", 1), CountingStore("10", count=1))], settle=0.3, timeout=30.0)
    barrier.wait()
    assert len(looks) <= 4, len(looks)  # polling every 0.5 ms would look about 600 times


def test_an_idle_cache_counts_as_caught_up_after_the_settle_time() -> None:
    busy, idle = FakeStore("30"), FakeStore("7")
    barrier = FreshnessBarrier([(lambda _at: at("30"), busy), (lambda _at: at("30"), idle)], settle=0.05, timeout=10.0)
    started = time.monotonic()
    barrier.wait()
    assert 0.05 <= time.monotonic() - started < 5.0


def test_a_create_whose_event_arrives_long_after_the_settle_time_is_waited_for() -> None:
    # The server holds 3 objects at resourceVersion 40; the store has applied up to 30 and holds 2: the
    # peer created at 40 is in flight. Quiet for far longer than `settle`, the store may not count as
    # caught up until that event is applied (here 0.5 s later, 50 settle times).
    store = FakeStore("30", count=2)
    barrier = FreshnessBarrier([(lambda _at: at("40", 3), store)], settle=0.01, timeout=30.0)
    applied: list[float] = []

    def late_event() -> None:
        time.sleep(0.5)
        applied.append(time.monotonic())
        store.count = 3
        store.resource_version = "40"

    threading.Thread(target=late_event).start()
    barrier.wait()
    assert applied and store.count == 3  # released only by the event itself
    assert time.monotonic() >= applied[0]


def test_a_delete_whose_event_is_late_is_waited_for_even_once_the_kind_is_quiet() -> None:
    # Count matters in both directions, and a store at the right count is then released by the settle
    # rule alone (the kind's later events are not needed).
    store = FakeStore("30", count=5)
    barrier = FreshnessBarrier([(lambda _at: at("40", 4), store)], settle=0.01, timeout=30.0)

    def late_delete() -> None:
        time.sleep(0.3)
        store.count = 4
        store.resource_version = "35"  # still below R: released by settle once the count matches

    threading.Thread(target=late_delete).start()
    barrier.wait()
    assert store.count == 4 and store.resource_version == "35"


def test_a_missing_event_times_out_naming_the_counts() -> None:
    barrier = FreshnessBarrier([(lambda _at: at("40", 3), FakeStore("30", count=2))], settle=0.01, timeout=0.3)
    with pytest.raises(TimeoutError, match="holds 2 of 3 objects"):
        barrier.wait()


def test_a_cache_that_keeps_moving_below_r_is_waited_for_and_then_times_out() -> None:
    store = FakeStore("1")
    stop = threading.Event()

    def trickle() -> None:
        rv = 1
        while not stop.is_set():
            rv += 1
            store.resource_version = str(min(rv, 99))  # never reaches 100, never quiet for 0.2 s
            time.sleep(0.01)

    threading.Thread(target=trickle, daemon=True).start()
    barrier = FreshnessBarrier([(lambda _at: at("100"), store)], settle=0.2, timeout=0.3)
    try:
        with pytest.raises(TimeoutError, match="did not catch up with resourceVersion 100"):
            barrier.wait()
    finally:
        stop.set()


def test_concurrent_callers_share_rounds() -> None:
    calls = []
    store = FakeStore("5")

    def current(_at: str | None) -> ServerState:
        calls.append(1)
        time.sleep(0.05)  # a slow consistent read: callers pile up behind it
        return at("5")

    barrier = FreshnessBarrier([(current, store)], settle=0.0, timeout=5.0)
    threads = [threading.Thread(target=barrier.wait) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert barrier.rounds == len(calls)
    assert len(calls) <= 3  # the first round, then at most one more for all who arrived during it (+ slack)


def test_a_failed_consistent_read_fails_the_callers_of_that_round() -> None:
    def broken(_at: str | None) -> ServerState:
        raise TimeoutError("api server unreachable")

    barrier = FreshnessBarrier([(broken, FakeStore("1"))], settle=0.0, timeout=1.0)
    with pytest.raises(TimeoutError, match="unreachable"):
        barrier.wait()


def test_the_anchor_is_read_consistently_and_the_other_kinds_side_by_side_at_its_resource_version() -> None:
    anchor_done = threading.Event()
    asked: list[str | None] = []
    together = threading.Barrier(3, timeout=30)  # passes only if all three reads are in flight at once

    def anchor(at_: str | None) -> ServerState:
        asked.append(at_)
        anchor_done.set()
        return at("17")

    def follower(at_: str | None) -> ServerState:
        assert anchor_done.is_set()  # read after the anchor, with what it returned
        asked.append(at_)
        together.wait()
        return at("18")

    kinds = [(anchor, FakeStore("17"))] + [(follower, FakeStore("18")) for _ in range(3)]
    barrier = FreshnessBarrier(kinds, settle=0.0, timeout=60.0)
    barrier.wait()  # followers read one after another would break the Barrier and fail this round
    barrier.close()
    assert asked == [None, "17", "17", "17"]


def test_a_caller_arriving_during_a_round_does_not_wait_for_that_rounds_settle_time() -> None:
    reads: list[float] = []
    first_reading = threading.Event()
    release_first = threading.Event()
    first_read_end: list[float] = []

    def current(_at: str | None) -> ServerState:
        reads.append(time.monotonic())
        if len(reads) == 1:
            first_reading.set()
            assert release_first.wait(30)
            first_read_end.append(time.monotonic())
        return at("9")

    barrier = FreshnessBarrier([(current, FakeStore("1"))], settle=3.0, timeout=60.0)  # idle: settles
    first = threading.Thread(target=barrier.wait)
    first.start()
    assert first_reading.wait(30)
    arrived = time.monotonic()  # while the first round reads: it may not be judged on that round
    second = threading.Thread(target=barrier.wait)
    second.start()
    release_first.set()
    second.join(60)
    first.join(60)
    assert len(reads) == 2 and reads[1] >= arrived  # its own round's read began after it arrived
    # Its round started when the first round's read ended, not after the first round's 3 s settle (a
    # whole settle of margin, so load cannot turn one behaviour into the other).
    assert reads[1] - first_read_end[0] < 3.0, reads[1] - first_read_end[0]


def test_every_wait_is_observed_in_the_freshness_histogram() -> None:
    from prometheus_client import REGISTRY

    def count() -> float:
        return REGISTRY.get_sample_value("sriovop_webhook_freshness_wait_seconds_count") or 0.0

    before = count()
    barrier = FreshnessBarrier([(lambda _at: at("3"), FakeStore("3"))], settle=0.0, timeout=5.0)
    barrier.wait()
    barrier.wait()
    assert count() - before == 2
