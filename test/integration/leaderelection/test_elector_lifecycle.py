"""The elector against the real API server: acquire, renew, release, takeover, metrics."""

from __future__ import annotations

import re
import time
from pathlib import Path

from prometheus_client import REGISTRY

from sriovop.runtime.client import Client
from sriovop.runtime.kinds import LEASE
from sriovop.runtime.leaderelection import LeaderElectionConfig
from test.support.leaderelection_harness import Candidate, Sampler, make_candidate
from test.support.poll import wait_for

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def _status(c: Candidate) -> float | None:
    return REGISTRY.get_sample_value("leader_election_master_status", {"name": c.elector.name})


def test_acquire_creates_the_lease(kubeconfig: Path, namespace: str, client: Client,
                                   candidates: list[Candidate]) -> None:
    a = make_candidate(kubeconfig, namespace, "a")
    candidates.append(a.start())
    wait_for(lambda: a.started_at is not None, 20, "a to lead")
    assert a.elector.is_leader() and a.elector.may_write()
    a.elector.check_fenced()
    spec = client.get(LEASE, "lock", namespace)["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 3
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["acquireTime"]) and MICRO_TIME.match(spec["renewTime"])
    wait_for(lambda: a.new_leaders == ["a"], 5, "on_new_leader(a)")
    assert _status(a) == 1


def test_renew_moves_renew_time_only(kubeconfig: Path, namespace: str, client: Client,
                                     candidates: list[Candidate]) -> None:
    a = make_candidate(kubeconfig, namespace, "a")
    candidates.append(a.start())
    wait_for(lambda: a.started_at is not None, 20, "a to lead")
    first = client.get(LEASE, "lock", namespace)
    wait_for(lambda: client.get(LEASE, "lock", namespace)["spec"]["renewTime"] != first["spec"]["renewTime"],
               10, "a renewal")
    later = client.get(LEASE, "lock", namespace)
    assert later["spec"]["acquireTime"] == first["spec"]["acquireTime"]
    assert later["spec"]["leaseTransitions"] == first["spec"]["leaseTransitions"]
    assert later["spec"]["renewTime"] > first["spec"]["renewTime"]
    assert later["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    # client-go TestFastPathLeaderElection: get, create, then renewals are updates without a get.
    requests = list(a.client.requests)
    assert requests[:2] == ["GET", "POST"]
    assert len(requests) > 2 and set(requests[2:]) == {"PUT"}
    assert a.elector.is_leader()


def test_release_on_graceful_stop(kubeconfig: Path, namespace: str, client: Client) -> None:
    a = make_candidate(kubeconfig, namespace, "a")
    a.start()
    wait_for(lambda: a.started_at is not None, 20, "a to lead")
    a.shutdown()
    spec = client.get(LEASE, "lock", namespace)["spec"]
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 0
    assert a.stopped_at is not None and a.leader_stop is not None and a.leader_stop.is_set()
    assert not a.elector.is_leader() and not a.elector.may_write()
    assert _status(a) == 0


def test_on_stopped_leading_runs_even_if_never_leader(kubeconfig: Path, namespace: str,
                                                      candidates: list[Candidate]) -> None:
    a = make_candidate(kubeconfig, namespace, "a")
    candidates.append(a.start())
    wait_for(lambda: a.started_at is not None, 20, "a to lead")
    b = make_candidate(kubeconfig, namespace, "b").start()
    wait_for(lambda: "a" in b.new_leaders, 10, "b to see a")
    b.shutdown()
    assert b.stopped_at is not None and b.started_at is None
    assert a.elector.is_leader()


def test_takeover_after_expiry(kubeconfig: Path, namespace: str, client: Client,
                               candidates: list[Candidate]) -> None:
    crash = LeaderElectionConfig(lease_duration=3.0, renew_deadline=2.0, retry_period=0.5,
                                 release_on_cancel=False)
    a = make_candidate(kubeconfig, namespace, "a", config=crash)
    a.start()
    wait_for(lambda: a.started_at is not None, 20, "a to lead")
    b = make_candidate(kubeconfig, namespace, "b")
    candidates.append(b.start())
    wait_for(lambda: "a" in b.new_leaders, 10, "b to see a")
    with Sampler([a, b]) as sampler:
        a.shutdown()  # no release: like a crash, the lease must expire
        assert client.get(LEASE, "lock", namespace)["spec"]["holderIdentity"] == "a"
        wait_for(lambda: b.started_at is not None, 30, "b to take over")
    assert a.stopped_at is not None and a.stopped_at < b.started_at  # type: ignore[operator]
    spec = client.get(LEASE, "lock", namespace)["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert sampler.samples > 0 and sampler.overlaps == [] and sampler.leader_overlaps == []
    assert b.new_leaders[-1] == "b"


def test_release_is_taken_over_through_the_watch(kubeconfig: Path, namespace: str,
                                                 candidates: list[Candidate]) -> None:
    """Polls alone would not retry for >= 20 s and the lease lasts 60 s: only the watch can explain
    a takeover inside the wait bound below."""
    slow = LeaderElectionConfig(lease_duration=60.0, renew_deadline=40.0, retry_period=20.0)
    a = make_candidate(kubeconfig, namespace, "a", config=slow)
    a.start()
    wait_for(lambda: a.started_at is not None, 20, "a to lead")
    b = make_candidate(kubeconfig, namespace, "b", config=slow)
    candidates.append(b.start())
    wait_for(lambda: "a" in b.new_leaders, 10, "b to see a")
    time.sleep(0.5)  # b is now in its >= 20 s retry sleep
    with Sampler([a, b]) as sampler:
        a.shutdown()
        wait_for(lambda: b.started_at is not None, 10, "b to take over the released lease")
    assert sampler.overlaps == [] and sampler.leader_overlaps == []


def test_lease_labels_are_merged(kubeconfig: Path, namespace: str, client: Client,
                                 candidates: list[Candidate]) -> None:
    a = make_candidate(kubeconfig, namespace, "a", lock_labels={"app": "sriovop"})
    candidates.append(a.start())
    wait_for(lambda: a.started_at is not None, 20, "a to lead")
    lease = client.get(LEASE, "lock", namespace)
    lease["metadata"]["labels"]["other"] = "kept"
    client.update(LEASE, lease)
    wait_for(lambda: client.get(LEASE, "lock", namespace)["spec"]["renewTime"] != lease["spec"]["renewTime"],
               10, "a renewal after the label change")
    labels = client.get(LEASE, "lock", namespace)["metadata"]["labels"]
    assert labels == {"app": "sriovop", "other": "kept"}
