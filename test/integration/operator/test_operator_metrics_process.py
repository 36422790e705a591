"""The real `sriovop operator` process exports each NodeState's sync and drain state on /metrics.

Host: a real kube-apiserver + etcd (the suite's control plane); no kubelet (a Node object and its
NodeState are created directly, their status written as a config daemon would).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.host.vfmetrics import iter_series
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import NODE
from test.support.operator_drain import client_for, create_node, create_node_state
from test.support.operator_process import OperatorProcess, ensure_supported_nics
from test.support.poll import wait_for


@pytest.fixture
def client(kubeconfig: Path, namespace: str) -> Iterator[Client]:
    c = client_for(kubeconfig)
    ensure_supported_nics(c, namespace)
    yield c


def _series(op: OperatorProcess, name: str, node: str) -> dict[str, float]:
    code, body = op.get("/metrics", op.metrics_port)
    assert code == 200
    return {labels.get("status") or labels.get("state") or "": value
            for series, labels, value in iter_series(body) if series == name and labels.get("node") == node}


def test_sync_status_and_drain_state_follow_the_node_state(client: Client, kubeconfig: Path, namespace: str,
                                                           tmp_path: Path) -> None:
    node = f"metrics-{uuid.uuid4().hex[:8]}"
    create_node(client, node, {"metrics-test": node})
    create_node_state(client, namespace, node)
    op = OperatorProcess(kubeconfig, namespace, tmp_path / "op.log")
    try:
        op.wait_ready()
        wait_for(lambda: _series(op, "sriovop_node_drain_state", node).get("Idle") == 1.0, 60,
                 f"drain state Idle for {node} on /metrics")
        assert _series(op, "sriovop_node_state_sync_status", node) == {}  # no daemon has reported yet
        client.patch(SRIOV_NETWORK_NODE_STATE, node, {"status": {"syncStatus": "Failed",
                                                               "lastSyncError": "pf 0000:01:00.0: step x: y"}},
                     namespace=namespace, subresource="status")
        wait_for(lambda: _series(op, "sriovop_node_state_sync_status", node) == {
            "Succeeded": 0.0, "InProgress": 0.0, "Failed": 1.0}, 60, f"syncStatus Failed for {node} on /metrics")
    finally:
        op.stop()
        client.delete(NODE, node)
