"""Node labelling without NFD (feature gate labelSriovCapableNodes), on the simulated SR-IOV host."""

from __future__ import annotations

from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_OPERATOR_CONFIG
from sriovop.daemon.nodelabel import FG_LABEL_SRIOV_CAPABLE_NODES, SRIOV_CAPABLE_LABEL
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import NODE
from sriovop.sim.host import SimHost
from test.support.daemon_harness import client_for, prepare_cluster, running_daemon, wait_sync
from test.support.poll import wait_for


def label(client: Client, node: str) -> str | None:
    return (client.get(NODE, node)["metadata"].get("labels") or {}).get(SRIOV_CAPABLE_LABEL)


def test_label_follows_the_capable_pfs_only_with_the_gate(kubeconfig: Path, namespace: str, node_name: str,
                                                          tmp_path: Path) -> None:
    client = client_for(kubeconfig)
    with SimHost(tmp_path / "host", ["xxv710:1"]) as sim:
        pf = sim.describe()["pfs"][0]
        prepare_cluster(client, namespace, node_name, spec={})
        with running_daemon(kubeconfig, namespace, node_name, sim.root) as daemon:
            wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
            # Gate off (the default): the daemon leaves the label alone.
            assert label(client, node_name) is None
            assert daemon.reconciler is not None and daemon.reconciler.node_labels.patches == 0

            client.patch(SRIOV_OPERATOR_CONFIG, "default", {"spec": {"featureGates": {
                FG_LABEL_SRIOV_CAPABLE_NODES: True}}}, namespace=namespace)
            wait_for(lambda: label(client, node_name) == "true", 30, "the capable label set")

            # Removed by hand: back at the next check.
            client.patch(NODE, node_name, {"metadata": {"labels": {SRIOV_CAPABLE_LABEL: None}}})
            wait_for(lambda: label(client, node_name) == "true", 30, "the capable label restored")

            # The last SR-IOV PF leaves the host (hot unplug): the label goes.
            sim.fault(pf["pciAddress"], vanish_now=True)
            wait_for(lambda: label(client, node_name) is None, 30, "the capable label removed")
            assert client.get(NODE, node_name)["metadata"]["labels"]["kubernetes.io/hostname"] == node_name
