"""Ports of client-go leaderelection_test.go table tests, against a fake lock (pure logic).

The fake is at client-go's level (resourcelock.Interface), not an API server: the real Lease lock is
exercised against kube-apiserver in test/integration/leaderelection.
"""

from __future__ import annotations

import json
import threading

import pytest

from sriovop.runtime.errors import Conflict, NotFound, ServerError
from sriovop.runtime.leaderelection import LeaderElectionConfig, LeaderElectionRecord, LeaderElector
from sriovop.runtime.leaderelection.elector import _Attempt
from sriovop.runtime.leaderelection.leaselock import WatchHandle
from test.support.poll import wait_for


class FakeLock:
    identity = "baz"

    def __init__(self, record: LeaderElectionRecord | None, update_errors: list[Exception] | None = None,
                 get_error: Exception | None = None) -> None:
        self.record = record
        self.update_errors = list(update_errors or [])
        self.get_error = get_error
        self.ops: list[str] = []

    def describe(self) -> str:
        return "fake/lock"

    def get(self, timeout: float | None = None) -> tuple[LeaderElectionRecord, str]:
        self.ops.append("get")
        if self.get_error is not None:
            raise self.get_error
        if self.record is None:
            raise NotFound(404, "leases.coordination.k8s.io \"lock\" not found")
        return self.record, raw(self.record)

    def create(self, record: LeaderElectionRecord, timeout: float | None = None) -> None:
        self.ops.append("create")
        if self.record is not None:
            raise Conflict(409, "already exists", {"reason": "AlreadyExists"})
        self.record = record

    def update(self, record: LeaderElectionRecord, timeout: float | None = None) -> None:
        self.ops.append("update")
        if self.update_errors:
            raise self.update_errors.pop(0)
        self.record = record

    def watch(self) -> WatchHandle | None:
        return None


def raw(record: LeaderElectionRecord) -> str:
    return json.dumps(record.to_lease_spec(), sort_keys=True)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def elector(lock: FakeLock, clock: Clock, new_leaders: list[str] | None = None) -> LeaderElector:
    seen = new_leaders if new_leaders is not None else []
    return LeaderElector(
        lock, LeaderElectionConfig(lease_duration=10, renew_deadline=5, retry_period=2),
        on_started_leading=lambda _s: None, on_stopped_leading=lambda: None,
        on_new_leader=seen.append, clock=clock,
    )


def try_(le: LeaderElector) -> bool:
    return le._try_acquire_or_renew(_Attempt(), 5.0)


def observe(le: LeaderElector, record: LeaderElectionRecord, at: float) -> None:
    """client-go's test setup: set observedRecord/observedTime directly."""
    le._observed, le._observed_raw, le._observed_time = record, raw(record), at


BING = LeaderElectionRecord("bing", 3, "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:00.000000Z", 1)


def test_acquire_from_no_object() -> None:
    lock, clock = FakeLock(None), Clock()
    le = elector(lock, clock)
    assert try_(le)
    assert lock.ops == ["get", "create"]
    assert lock.record is not None and lock.record.holder_identity == "baz"
    assert lock.record.leader_transitions == 0 and lock.record.lease_duration_seconds == 10


def test_acquire_from_object_without_annotations() -> None:
    lock, clock = FakeLock(LeaderElectionRecord()), Clock()
    le = elector(lock, clock)
    assert try_(le)
    assert lock.ops == ["get", "update"]
    assert lock.record is not None and lock.record.holder_identity == "baz"
    assert lock.record.leader_transitions == 1


def test_acquire_from_led_object_after_its_lease_duration() -> None:
    lock, clock = FakeLock(BING), Clock()
    le = elector(lock, clock)
    assert not try_(le)  # just observed: held for 3 s from now
    clock.now += 3.0
    assert try_(le)
    assert lock.record is not None and lock.record.holder_identity == "baz"
    assert lock.record.leader_transitions == 2


def test_acquire_from_unled_object() -> None:
    lock, clock = FakeLock(LeaderElectionRecord("", 3, leader_transitions=1)), Clock()
    le = elector(lock, clock)
    assert try_(le)
    assert lock.record is not None and lock.record.holder_identity == "baz"


def test_acquire_from_led_unacked_object() -> None:
    lock, clock = FakeLock(BING), Clock()
    le = elector(lock, clock)
    observe(le, BING, clock.now - 1000)  # seen unchanged for much longer than its duration
    assert try_(le)
    assert lock.record is not None and lock.record.holder_identity == "baz"


def test_acquire_from_empty_led_acked_object() -> None:
    empty = LeaderElectionRecord("", 3)
    lock, clock = FakeLock(empty), Clock()
    le = elector(lock, clock)
    observe(le, empty, clock.now + 1000)  # observed "in the future": still free to take
    assert try_(le)
    assert lock.record is not None and lock.record.holder_identity == "baz"


def test_dont_acquire_from_led_acked_object() -> None:
    lock, clock = FakeLock(BING), Clock()
    le = elector(lock, clock)
    observe(le, BING, clock.now + 1000)
    assert not try_(le)
    assert lock.ops == ["get"]
    assert lock.record is BING


def test_renew_already_acquired_object() -> None:
    mine = LeaderElectionRecord("baz", 10, "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:00.000000Z", 4)
    lock, clock = FakeLock(mine), Clock()
    le = elector(lock, clock)
    observe(le, mine, clock.now)
    assert try_(le)
    assert lock.ops == ["update"]  # fast path: no get
    assert lock.record is not None
    assert lock.record.acquire_time == mine.acquire_time and lock.record.leader_transitions == 4
    assert lock.record.renew_time != mine.renew_time


def test_get_error_fails_the_attempt() -> None:
    lock, clock = FakeLock(BING, get_error=ServerError(500, "etcd unavailable")), Clock()
    assert not try_(elector(lock, clock))


def test_new_leader_is_reported_once_per_change() -> None:
    lock, clock = FakeLock(BING), Clock()
    seen: list[str] = []
    le = elector(lock, clock, seen)
    try_(le)
    le._maybe_report_transition()
    try_(le)
    le._maybe_report_transition()
    wait_for(lambda: seen == ["bing"], what="on_new_leader(bing)")
    clock.now += 3.0
    try_(le)
    le._maybe_report_transition()
    wait_for(lambda: seen == ["bing", "baz"], what="on_new_leader(baz)")


def test_fast_path_lock_operations() -> None:
    lock, clock = FakeLock(None), Clock()
    le = elector(lock, clock)
    for _ in range(3):
        assert try_(le)
        clock.now += 1
    assert lock.ops == ["get", "create", "update", "update"]


def test_fast_path_conflict_falls_back_to_get() -> None:
    lock, clock = FakeLock(None), Clock()
    le = elector(lock, clock)
    assert try_(le)
    assert try_(le)
    lock.update_errors.append(Conflict(409, "the object has been modified"))
    assert try_(le)
    assert try_(le)
    assert lock.ops == ["get", "create", "update", "update", "get", "update", "update"]


def test_slow_path_renewal_keeps_acquire_time_and_counts_slowpath() -> None:
    lock, clock = FakeLock(None), Clock()
    le = elector(lock, clock)
    assert try_(le)
    acquired = lock.record
    assert acquired is not None
    clock.now += 100  # our own observation is stale: no fast path
    assert try_(le)
    assert lock.ops == ["get", "create", "get", "update"]
    assert lock.record is not None and lock.record.acquire_time == acquired.acquire_time
    assert lock.record.leader_transitions == acquired.leader_transitions


def test_abandoned_attempt_changes_nothing() -> None:
    lock, clock = FakeLock(None), Clock()
    le = elector(lock, clock)
    attempt = _Attempt()
    attempt.abandoned = True
    assert not le._try_acquire_or_renew(attempt, 5.0)
    assert le.get_leader() == "" and not le.may_write()


def _leading(lock: FakeLock, clock: Clock) -> LeaderElector:
    le = elector(lock, clock)
    assert try_(le)
    le._leading = True
    lock.ops.clear()
    return le


def test_release_empties_holder_and_sets_one_second() -> None:
    lock, clock = FakeLock(None), Clock()
    le = _leading(lock, clock)
    transitions = lock.record.leader_transitions  # type: ignore[union-attr]
    assert le._release()
    assert lock.ops == ["get", "update"]  # release reads first
    assert lock.record is not None and lock.record.holder_identity == ""
    assert lock.record.lease_duration_seconds == 1
    assert lock.record.leader_transitions == transitions


def test_release_retries_on_conflict() -> None:
    lock, clock = FakeLock(None), Clock()
    le = _leading(lock, clock)
    lock.update_errors.append(Conflict(409, "the object has been modified"))
    assert le._release()
    assert lock.ops == ["get", "update", "get", "update"]
    assert lock.record is not None and lock.record.holder_identity == ""


def test_release_of_a_lease_held_by_someone_else_writes_nothing() -> None:
    lock, clock = FakeLock(BING), Clock()
    le = elector(lock, clock)
    assert le._release()
    assert lock.ops == ["get"]


def test_healthy_can_run_concurrently_with_renewals() -> None:
    lock, clock = FakeLock(None), Clock()
    le = _leading(lock, clock)
    stop = threading.Event()
    results: list[bool] = []

    def check() -> None:
        while not stop.is_set():
            results.append(le.healthy(0))

    t = threading.Thread(target=check)
    t.start()
    for _ in range(200):
        assert try_(le)
    stop.set()
    t.join()
    assert results and all(results)
    clock.now += 100
    assert not le.healthy(0)  # a leader that stopped renewing is unhealthy


def test_may_write_tracks_renew_deadline_on_the_monotonic_clock() -> None:
    lock, clock = FakeLock(None), Clock()
    le = _leading(lock, clock)
    assert le.may_write()
    clock.now += 4.9
    assert le.may_write()
    clock.now += 0.2  # 5.1 s since the last renewal was sent; renew_deadline is 5 s
    assert not le.may_write()
    assert try_(le)  # a renewal restores it
    assert le.may_write()


@pytest.mark.parametrize("error", [NotFound(404, "gone"), ServerError(500, "boom")])
def test_release_fails_on_get_errors(error: Exception) -> None:
    lock, clock = FakeLock(None), Clock()
    le = _leading(lock, clock)
    lock.get_error = error
    assert not le._release()
