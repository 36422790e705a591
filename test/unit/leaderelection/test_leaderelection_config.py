"""Pure logic of leader election: record conversion, MicroTime, and client-go's config validation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from sriovop.runtime.leaderelection import (
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
    LockNotInitialized,
    NotLeaderError,
    default_identity,
    format_micro_time,
    parse_micro_time,
)


def test_micro_time_has_six_fractional_digits_in_utc() -> None:
    at = datetime(2026, 11, 30, 4, 30, 43, 120, tzinfo=UTC)
    assert format_micro_time(at) == "2026-11-30T04:30:43.000120Z"
    east = datetime(2026, 11, 30, 6, 30, 43, 500000, tzinfo=timezone(timedelta(hours=2)))
    assert format_micro_time(east) == "2026-11-30T04:30:43.500000Z"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30T04:30:43.000120Z", datetime(2026, 11, 30, 4, 30, 43, 120, tzinfo=UTC)),
        ("2026-11-30T04:30:43Z", datetime(2026, 11, 30, 4, 30, 43, tzinfo=UTC)),
        ("2026-11-30T04:30:43.5Z", datetime(2026, 11, 30, 4, 30, 43, 500000, tzinfo=UTC)),
        ("2026-11-30T06:30:43.123456789+02:00", datetime(2026, 11, 30, 4, 30, 43, 123456, tzinfo=UTC)),
    ],
)
def test_parse_micro_time(text: str, expected: datetime) -> None:
    assert parse_micro_time(text) == expected


def test_parse_micro_time_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="not RFC 3339"):
        parse_micro_time("yesterday")


def test_lease_spec_round_trip() -> None:
    record = LeaderElectionRecord("baz", 15, "2026-11-30T04:30:43.000000Z", "2026-11-30T04:30:45.000000Z", 3)
    spec = record.to_lease_spec()
    assert spec == {
        "holderIdentity": "baz", "leaseDurationSeconds": 15, "leaseTransitions": 3,
        "acquireTime": "2026-11-30T04:30:43.000000Z", "renewTime": "2026-11-30T04:30:45.000000Z",
    }
    assert LeaderElectionRecord.from_lease_spec(spec) == record


def test_empty_lease_spec_is_a_free_lease() -> None:
    record = LeaderElectionRecord.from_lease_spec({})
    assert record.holder_identity == "" and record.leader_transitions == 0
    assert LeaderElectionRecord.from_lease_spec(None) == record


def test_defaults_are_client_go_defaults() -> None:
    cfg = LeaderElectionConfig()
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (15.0, 10.0, 2.0)
    cfg.validate()
    LeaderElectionConfig(lease_duration=15, renew_deadline=2, retry_period=1).validate()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lease_duration": 10, "renew_deadline": 10}, "lease_duration .* must be greater than renew_deadline"),
        ({"renew_deadline": 2.4, "retry_period": 2}, r"renew_deadline .* retry_period\*JitterFactor"),
        ({"lease_duration": 0}, "lease_duration must be greater than zero"),
        ({"renew_deadline": -1}, "renew_deadline must be greater than zero"),
        ({"retry_period": 0}, "retry_period must be greater than zero"),
    ],
)
def test_config_validation(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeaderElectionConfig(**kwargs).validate()  # type: ignore[arg-type]


class _NoClient:
    def request(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no API call expected")

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no API call expected")


def test_lock_requires_identity_namespace_and_name() -> None:
    with pytest.raises(ValueError, match="Lock identity is empty"):
        LeaseLock(_NoClient(), "ns", "lease", "")
    with pytest.raises(ValueError, match="namespace"):
        LeaseLock(_NoClient(), "", "lease", "me")
    with pytest.raises(ValueError, match="name"):
        LeaseLock(_NoClient(), "ns", "", "me")


def test_update_before_get_or_create_fails() -> None:
    lock = LeaseLock(_NoClient(), "ns", "lease", "me")
    with pytest.raises(LockNotInitialized, match="lease not initialized"):
        lock.update(LeaderElectionRecord("me", 15))


def test_elector_validates_config_and_starts_as_follower() -> None:
    lock = LeaseLock(_NoClient(), "ns", "lease", "me")
    with pytest.raises(ValueError, match="renew_deadline"):
        LeaderElector(lock, LeaderElectionConfig(lease_duration=5, renew_deadline=6),
                      on_started_leading=lambda _stop: None, on_stopped_leading=lambda: None)
    elector = LeaderElector(lock, on_started_leading=lambda _stop: None, on_stopped_leading=lambda: None)
    assert not elector.is_leader()
    assert not elector.may_write()
    assert elector.healthy()


def test_default_identity_is_unique_per_call() -> None:
    assert default_identity() != default_identity()


def test_check_fenced_names_the_reason() -> None:
    lock = LeaseLock(_NoClient(), "ns", "lease", "me")
    elector = LeaderElector(lock, on_started_leading=lambda _s: None, on_stopped_leading=lambda: None)
    with pytest.raises(NotLeaderError, match="not the leader"):
        elector.check_fenced()
