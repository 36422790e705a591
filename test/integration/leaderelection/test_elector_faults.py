"""The elector under contention and faults, against the real API server.

Every scenario samples all candidates' may_write()/is_leader() throughout: never two at once.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from sriovop.runtime.client import Client
from sriovop.runtime.errors import Conflict
from sriovop.runtime.kinds import LEASE
from sriovop.runtime.leaderelection import (
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaseLock,
    NotLeaderError,
)
from test.support.leaderelection_harness import (
    FAST,
    Candidate,
    MonotonicWithJump,
    Sampler,
    WallWithJump,
    make_candidate,
)
from test.support.poll import wait_for


def _free_lease(client: Client, namespace: str) -> None:
    client.create(LEASE, {"metadata": {"name": "lock", "namespace": namespace},
                          "spec": LeaderElectionRecord("", 1).to_lease_spec()}, namespace=namespace)


def test_lock_updates_carry_resource_version(client: Client, namespace: str) -> None:
    _free_lease(client, namespace)
    a = LeaseLock(client, namespace, "lock", "a")
    b = LeaseLock(client, namespace, "lock", "b")
    a.get()
    b.get()
    a.update(LeaderElectionRecord("a", 15))
    with pytest.raises(Conflict):
        b.update(LeaderElectionRecord("b", 15))
    assert client.get(LEASE, "lock", namespace)["spec"]["holderIdentity"] == "a"
    with pytest.raises(Conflict) as exc:
        b.create(LeaderElectionRecord("b", 15))
    assert exc.value.already_exists


@pytest.mark.parametrize("existing", [False, True], ids=["create-race", "update-race"])
def test_concurrent_acquire_exactly_one_wins(kubeconfig: Path, namespace: str, client: Client,
                                             candidates: list[Candidate], existing: bool) -> None:
    """Both candidates read the same state before either writes; the API server lets one through."""
    if existing:
        _free_lease(client, namespace)
    a = make_candidate(kubeconfig, namespace, "a")
    b = make_candidate(kubeconfig, namespace, "b")
    barrier = threading.Barrier(2, timeout=20)
    first_get = {"a": True, "b": True}

    def meet(who: str) -> None:
        if first_get[who]:
            first_get[who] = False
            barrier.wait()

    a.client.after_get = lambda: meet("a")
    b.client.after_get = lambda: meet("b")
    if not existing:  # a NotFound GET raises before after_get runs; meet before the POST instead
        for cand, who in ((a, "a"), (b, "b")):
            inner = cand.client.request

            def request(method: str, path: str, _inner=inner, _who=who, **kw: object) -> object:
                if method == "POST":
                    meet(_who)
                return _inner(method, path, **kw)

            cand.client.request = request  # type: ignore[method-assign]
    with Sampler([a, b]) as sampler:
        candidates.extend([a.start(), b.start()])
        wait_for(lambda: (a.started_at is not None) or (b.started_at is not None), 20, "a leader")
        time.sleep(1.0)  # several retry periods in which the loser must stay a follower
    winner, loser = (a, b) if a.started_at is not None else (b, a)
    assert loser.started_at is None and not loser.elector.is_leader()
    assert [e.code for e in loser.client.errors if isinstance(e, Conflict)] == [409]
    assert not [e for e in winner.client.errors if isinstance(e, Conflict)]
    assert client.get(LEASE, "lock", namespace)["spec"]["holderIdentity"] == winner.identity
    assert sampler.overlaps == [] and sampler.leader_overlaps == []


def test_holder_monotonic_clock_jump_fences_it(kubeconfig: Path, namespace: str,
                                               candidates: list[Candidate]) -> None:
    """A jump of the holder's monotonic clock is what a paused process sees on resume: it must stop
    writing at once and stop leading, without any API call deciding it."""
    clock = MonotonicWithJump()
    a = make_candidate(kubeconfig, namespace, "a", clock=clock)
    candidates.append(a.start())
    wait_for(lambda: a.started_at is not None, 20, "a to lead")
    b = make_candidate(kubeconfig, namespace, "b")
    candidates.append(b.start())
    wait_for(lambda: "a" in b.new_leaders, 10, "b to see a")
    with Sampler([a, b]) as sampler:
        assert a.elector.may_write()
        clock.offset += 100.0
        assert not a.elector.may_write()
        with pytest.raises(NotLeaderError, match="renew_deadline"):
            a.elector.check_fenced()
        wait_for(lambda: a.stopped_at is not None, 10, "a to stop leading")
        wait_for(lambda: b.started_at is not None, 30, "b to take over")
    assert a.stopped_at < b.started_at  # type: ignore[operator]
    assert sampler.overlaps == [] and sampler.leader_overlaps == []


def test_holder_wall_clock_jump_changes_nothing(kubeconfig: Path, namespace: str, client: Client,
                                                candidates: list[Candidate]) -> None:
    """Expiry is judged on followers' monotonic clocks, so timestamps written by a holder whose wall
    clock jumped an hour back (or forward) neither hand the lease over nor stop the holder."""
    wall = WallWithJump()
    # More slack between renewals and the deadline than FAST: this test asserts leadership is kept,
    # which a heavily loaded test machine must not break.
    relaxed = LeaderElectionConfig(lease_duration=5.0, renew_deadline=4.0, retry_period=0.5)
    a = make_candidate(kubeconfig, namespace, "a", wall_clock=wall, config=relaxed)
    candidates.append(a.start())
    wait_for(lambda: a.started_at is not None, 20, "a to lead")
    b = make_candidate(kubeconfig, namespace, "b", config=relaxed)
    candidates.append(b.start())
    wait_for(lambda: "a" in b.new_leaders, 10, "b to see a")
    with Sampler([a, b]) as sampler:
        for jump in (-3600.0, 7200.0):
            wall.offset += jump
            time.sleep(1.5 * relaxed.lease_duration)
            assert a.elector.is_leader() and a.elector.may_write()
            assert b.started_at is None
    renew = client.get(LEASE, "lock", namespace)["spec"]["renewTime"]
    assert renew > time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 1800))
    assert sampler.overlaps == [] and sampler.leader_overlaps == []


def test_blocked_renewals_stop_the_leader_before_takeover(kubeconfig: Path, namespace: str,
                                                          candidates: list[Candidate]) -> None:
    """The leader's API calls hang (a partition): it must stop within the RenewDeadline even though
    its requests never return, and the follower takes over only after that."""
    a = make_candidate(kubeconfig, namespace, "a")
    candidates.append(a.start())
    wait_for(lambda: a.started_at is not None, 20, "a to lead")
    b = make_candidate(kubeconfig, namespace, "b")
    candidates.append(b.start())
    wait_for(lambda: "a" in b.new_leaders, 10, "b to see a")
    with Sampler([a, b]) as sampler:
        a.client.block()
        wait_for(lambda: a.stopped_at is not None, 3 * FAST.renew_deadline, "a to stop leading")
        assert not a.elector.may_write() and not a.elector.is_leader()
        wait_for(lambda: b.started_at is not None, 30, "b to take over")
    assert a.stopped_at < b.started_at  # type: ignore[operator]
    assert a.leader_stop is not None and a.leader_stop.is_set()
    assert sampler.overlaps == [] and sampler.leader_overlaps == []


def test_churn_never_two_leaders(kubeconfig: Path, namespace: str, candidates: list[Candidate]) -> None:
    """Three candidates; the leader is repeatedly stopped (alternately released and crashed) and
    replaced by a fresh candidate."""
    pool = [make_candidate(kubeconfig, namespace, f"c{i}") for i in range(3)]
    everyone = list(pool)
    for c in pool:
        c.start()
    leaders: list[str] = []
    with Sampler(everyone) as sampler:
        for round_ in range(4):
            wait_for(lambda: any(c.elector.is_leader() for c in pool), 30, "a leader")
            leader = next(c for c in pool if c.elector.is_leader())
            leaders.append(leader.identity)
            if round_ % 2:
                leader.crash()  # its lease must expire
            else:
                leader.shutdown()  # released: taken over at once
            pool.remove(leader)
            fresh = make_candidate(kubeconfig, namespace, f"n{round_}")
            everyone.append(fresh)  # the sampler's list
            pool.append(fresh.start())
        wait_for(lambda: any(c.elector.is_leader() for c in pool), 30, "a final leader")
    candidates.extend(everyone)
    assert len(set(leaders)) == 4
    assert sampler.samples > 100
    assert sampler.overlaps == [] and sampler.leader_overlaps == []
