"""The operator process: one Lease for both managers, cleanup only by the leader, and a failing
manager ending the process with exit code 1 after the cleanup."""

from __future__ import annotations

import signal
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK, SRIOV_NETWORK_NODE_STATE
from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import LEASE, NODE, POD
from test.support.kubelet import FakeKubelet
from test.support.operator_drain import (
    annotation,
    client_for,
    create_node,
    create_node_state,
    create_pod,
    create_pool,
    request_drain,
)
from test.support.operator_process import (
    OperatorProcess,
    ensure_supported_nics,
    failure_policies,
    install_failing_webhooks,
    remove_webhooks,
)
from test.support.poll import wait_for

LEASE_NAME = "a56def2a.openshift.io"
FAST_ELECTION = ["--leader-elect", "--leader-election-lease-duration", "4s",
                 "--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "0.5s"]


@pytest.fixture
def client(kubeconfig: Path, namespace: str) -> Iterator[Client]:
    c = client_for(kubeconfig)
    ensure_supported_nics(c, namespace)
    install_failing_webhooks(c)
    yield c
    remove_webhooks(c)


def network(client: Client, namespace: str, name: str) -> None:
    client.create(SRIOV_NETWORK, {"metadata": {"name": name, "namespace": namespace},
                                  "spec": {"resourceName": "intel_vfs"}})


def has_finalizer(client: Client, namespace: str, name: str) -> bool:
    return consts.NETATTDEF_FINALIZER in (client.get(SRIOV_NETWORK, name, namespace)["metadata"].get("finalizers")
                                          or [])


def holder(client: Client, namespace: str) -> str:
    try:
        lease: dict[str, Any] = client.get(LEASE, LEASE_NAME, namespace)
    except NotFound:
        return ""
    return str(lease.get("spec", {}).get("holderIdentity") or "")


def test_only_the_leader_acts_and_cleans_up(client: Client, kubeconfig: Path, namespace: str,
                                            tmp_path: Path) -> None:
    leader = OperatorProcess(kubeconfig, namespace, tmp_path / "a.log",
                             args=[*FAST_ELECTION, "--leader-election-identity", "replica-a"])
    follower: OperatorProcess | None = None
    try:
        leader.wait_ready()
        wait_for(lambda: holder(client, namespace) == "replica-a", 30, "replica-a holding the Lease")
        follower = OperatorProcess(kubeconfig, namespace, tmp_path / "b.log",
                                   args=[*FAST_ELECTION, "--leader-election-identity", "replica-b"])
        follower.wait_ready()  # caches warm on a follower; its controllers wait for the lease
        network(client, namespace, "net-1")
        wait_for(lambda: has_finalizer(client, namespace, "net-1"), 60, "the leader's finalizer on net-1")

        # A follower going away must not undo anything the leader manages.
        assert follower.terminate(signal.SIGTERM) == 0, follower.log_tail()
        assert has_finalizer(client, namespace, "net-1")
        assert failure_policies(client) == ["Fail"] * 3
        assert holder(client, namespace) == "replica-a"
        assert "not leading at shutdown" in follower.log_tail(200)

        # The leader cleans up while it still holds the lease, then releases it.
        assert leader.terminate(signal.SIGTERM) == 0, leader.log_tail()
        assert not has_finalizer(client, namespace, "net-1")
        assert failure_policies(client) == ["Ignore"] * 3
        assert holder(client, namespace) == ""
    finally:
        leader.stop()
        if follower is not None:
            follower.stop()


def test_a_failing_manager_stops_the_process_with_exit_1_after_cleanup(
        client: Client, kubeconfig: Path, namespace: str, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        # The metrics endpoint cannot bind (the last flag wins): the namespaced manager fails.
        op = OperatorProcess(kubeconfig, namespace, tmp_path / "op.log",
                             args=["--metrics-bind-address", f"127.0.0.1:{port}"])
        try:
            code = op.proc.wait(90)
        finally:
            op.stop()
    log = op.log_path.read_text()
    assert code == 1, log
    assert "manager failed" in log
    assert failure_policies(client) == ["Ignore"] * 3


def test_the_operator_process_drains_through_its_uncached_drain_controller(
        client: Client, kubeconfig: Path, namespace: str, tmp_path: Path) -> None:
    """The wiring of the real process: a drain request is answered (cordon, eviction, DrainComplete,
    uncordon on Idle) by `sriovop operator` itself."""
    tag = uuid.uuid4().hex[:8]
    node = f"proc-{tag}"
    create_node(client, node, {"proc": tag})
    create_node_state(client, namespace, node)
    create_pool(client, namespace, "proc", {"proc": tag}, 1)
    create_pod(client, namespace, "vf-user", node, sriov=True)
    op = OperatorProcess(kubeconfig, namespace, tmp_path / "op.log")
    try:
        with FakeKubelet(client, namespace):
            op.wait_ready()
            request_drain(client, namespace, node)
            wait_for(lambda: annotation(client.get(SRIOV_NETWORK_NODE_STATE, node, namespace),
                                        consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_COMPLETE,
                     60, "DrainComplete from the operator process")
            assert client.get(NODE, node)["spec"]["unschedulable"] is True
            with pytest.raises(NotFound):
                client.get(POD, "vf-user", namespace)
            request_drain(client, namespace, node, consts.DRAIN_IDLE)
            wait_for(lambda: not client.get(NODE, node)["spec"].get("unschedulable"), 60, "the node uncordoned")
        assert op.terminate(signal.SIGTERM) == 0, op.log_tail()
    finally:
        op.stop()
    client.delete(NODE, node)


def test_a_follower_takes_over_when_the_leader_dies(client: Client, kubeconfig: Path, namespace: str,
                                                    tmp_path: Path) -> None:
    first = OperatorProcess(kubeconfig, namespace, tmp_path / "a.log",
                            args=[*FAST_ELECTION, "--leader-election-identity", "replica-a"])
    second: OperatorProcess | None = None
    try:
        first.wait_ready()
        wait_for(lambda: holder(client, namespace) == "replica-a", 30, "replica-a holding the Lease")
        second = OperatorProcess(kubeconfig, namespace, tmp_path / "b.log",
                                 args=[*FAST_ELECTION, "--leader-election-identity", "replica-b"])
        second.wait_ready()
        first.proc.kill()
        first.proc.wait(10)
        wait_for(lambda: holder(client, namespace) == "replica-b", 30, "replica-b taking the Lease over")
        network(client, namespace, "after-failover")
        wait_for(lambda: has_finalizer(client, namespace, "after-failover"), 60,
                 "the new leader reconciling a network")
        assert second.terminate(signal.SIGTERM) == 0, second.log_tail()
        assert not has_finalizer(client, namespace, "after-failover")
        assert failure_policies(client) == ["Ignore"] * 3
    finally:
        first.stop()
        if second is not None:
            second.stop()
