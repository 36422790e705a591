"""The elector when kube-apiserver itself fails: restarted, or frozen (SIGSTOP) past the RenewDeadline.

These need a private control plane (the shared one must not be restarted under other tests).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from sriovop.devcluster import ControlPlane
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.kinds import LEASE, NAMESPACE
from test.support.leaderelection_harness import FAST, Candidate, Sampler, make_candidate
from test.support.poll import wait_for


@pytest.fixture(scope="module")
def private_cp() -> Iterator[ControlPlane]:
    cp = ControlPlane().start()
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture
def ns(private_cp: ControlPlane, request: pytest.FixtureRequest) -> str:
    name = request.node.name.replace("_", "-")[:50].strip("-")
    client = Client(load_config(str(private_cp.kubeconfig)))
    client.create(NAMESPACE, {"metadata": {"name": name}})
    client.close()
    return name


def _leader_and_follower(cp: ControlPlane, ns: str, candidates: list[Candidate]) -> tuple[Candidate, Candidate]:
    a = make_candidate(cp.kubeconfig, ns, "a")
    candidates.append(a.start())
    wait_for(lambda: a.started_at is not None, 20, "a to lead")
    b = make_candidate(cp.kubeconfig, ns, "b")
    candidates.append(b.start())
    wait_for(lambda: "a" in b.new_leaders, 10, "b to see a")
    return a, b


def test_apiserver_restart_longer_than_renew_deadline(private_cp: ControlPlane, ns: str,
                                                      candidates: list[Candidate]) -> None:
    a, b = _leader_and_follower(private_cp, ns, candidates)
    with Sampler([a, b]) as sampler:
        private_cp.restart_apiserver(downtime=2 * FAST.renew_deadline)
        wait_for(lambda: a.stopped_at is not None, 30, "a to stop leading while the server was down")
        wait_for(lambda: b.started_at is not None, 60, "b to lead after the restart")
    assert a.stopped_at < b.started_at  # type: ignore[operator]
    assert sampler.overlaps == [] and sampler.leader_overlaps == []
    client = Client(load_config(str(private_cp.kubeconfig)))
    try:
        assert client.get(LEASE, "lock", ns)["spec"]["holderIdentity"] == "b"
    finally:
        client.close()


def test_frozen_apiserver_makes_the_leader_stop_within_renew_deadline(private_cp: ControlPlane, ns: str,
                                                                       candidates: list[Candidate]) -> None:
    """Requests to a SIGSTOPped server hang rather than fail: the bounded renewal must still give up."""
    a, b = _leader_and_follower(private_cp, ns, candidates)
    assert private_cp.apiserver is not None
    pid = private_cp.apiserver.pid
    with Sampler([a, b]) as sampler:
        os.kill(pid, signal.SIGSTOP)
        try:
            wait_for(lambda: a.stopped_at is not None, 3 * FAST.renew_deadline,
                       "a to stop leading while its requests hang")
            assert not a.elector.may_write()
            assert b.started_at is None  # nobody can take a lease while the server is frozen
            time.sleep(FAST.lease_duration)
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_for(lambda: b.started_at is not None, 60, "b to lead after the server thawed")
    assert a.stopped_at < b.started_at  # type: ignore[operator]
    assert sampler.overlaps == [] and sampler.leader_overlaps == []
