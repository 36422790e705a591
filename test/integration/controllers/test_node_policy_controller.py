"""The node policy controller against the real API server: NodeStates, device-plugin config, labels.

Nodes are cluster-scoped and shared by the whole test run, so each test selects its own nodes with a
unique `configDaemonNodeSelector` label and deletes them at the end.
"""

from __future__ import annotations

import calendar
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import (
    SRIOV_NETWORK_NODE_POLICY,
    SRIOV_NETWORK_NODE_STATE,
    SRIOV_NETWORK_POOL_CONFIG,
    SRIOV_OPERATOR_CONFIG,
)
from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import CONFIG_MAP, NODE
from test.support.controllers_harness import client_for, node_policy_controller
from test.support.poll import wait_for

RUN_LABEL = "sriovop.test/run"
IFACES = [
    {"name": "ens1f0", "altNames": ["enp59s0f0"], "pciAddress": "0000:3b:00.0", "vendor": "8086",
     "deviceID": "158b", "driver": "i40e", "totalvfs": 64, "mtu": 1500, "linkType": "ETH"},
    {"name": "ens1f1", "pciAddress": "0000:3b:00.1", "vendor": "8086", "deviceID": "158b", "driver": "i40e",
     "totalvfs": 64, "mtu": 1500, "linkType": "ETH"},
]


class Cluster:
    def __init__(self, client: Client, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.run = uuid.uuid4().hex[:10]
        self.nodes: list[str] = []

    def config(self) -> dict[str, Any]:
        return self.client.create(SRIOV_OPERATOR_CONFIG, {
            "metadata": {"name": "default", "namespace": self.namespace},
            "spec": {"configDaemonNodeSelector": {RUN_LABEL: self.run}}})

    def node(self, suffix: str, **labels: str) -> str:
        name = f"{self.run}-{suffix}"
        self.client.create(NODE, {"metadata": {"name": name, "labels": {RUN_LABEL: self.run, **labels}}})
        self.nodes.append(name)
        return name

    def relabel(self, name: str, labels: dict[str, str | None]) -> None:
        self.client.patch(NODE, name, {"metadata": {"labels": labels}})

    def policy(self, name: str, priority: int, selector: dict[str, str], **spec: Any) -> None:
        self.client.create(SRIOV_NETWORK_NODE_POLICY, {
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {"priority": priority, "nodeSelector": selector, "deviceType": "netdevice", "isRdma": False,
                     **spec}})

    def state(self, node: str) -> dict[str, Any]:
        return self.client.get(SRIOV_NETWORK_NODE_STATE, node, self.namespace)

    def report(self, node: str, interfaces: list[dict[str, Any]]) -> None:
        """What the config daemon does: write the discovered interfaces into the NodeState status."""
        state = wait_for(lambda: self.state(node), what=f"NodeState {node}")
        state["status"] = {"interfaces": interfaces, "syncStatus": "Succeeded"}
        self.client.update_status(SRIOV_NETWORK_NODE_STATE, state)

    def spec_interfaces(self, node: str) -> list[dict[str, Any]]:
        return list((self.state(node).get("spec") or {}).get("interfaces") or [])

    def dp_config(self, node: str) -> str | None:
        cm = self.client.get(CONFIG_MAP, consts.DEVICE_PLUGIN_CONFIGMAP, self.namespace)
        return (cm.get("data") or {}).get(node)

    def label(self, node: str) -> str | None:
        return (self.client.get(NODE, node)["metadata"].get("labels") or {}).get(consts.DEVICE_PLUGIN_LABEL)

    def cleanup(self) -> None:
        for name in self.nodes:
            try:
                self.client.delete(NODE, name)
            except NotFound:
                pass


@pytest.fixture
def cluster(kubeconfig: Path, namespace: str) -> Iterator[Cluster]:
    c = Cluster(client_for(kubeconfig), namespace)
    yield c
    c.cleanup()


def groups(iface: dict[str, Any]) -> list[tuple[str, str]]:
    return [(g["policyName"], g["vfRange"]) for g in iface.get("vfGroups") or []]


def test_policies_on_overlapping_nodes_with_priorities(kubeconfig: Path, namespace: str, cluster: Cluster) -> None:
    config = cluster.config()
    both = cluster.node("both", a="1", b="1")
    only_a = cluster.node("only-a", a="1")
    only_b = cluster.node("only-b", b="1")
    idle = cluster.node("idle")
    cluster.policy("low", 50, {"a": "1"}, resourceName="r_low", numVfs=8, mtu=1500,
                   nicSelector={"pfNames": ["ens1f0#0-3"]})
    cluster.policy("high", 10, {"b": "1"}, resourceName="r_high", numVfs=16, mtu=9000,
                   nicSelector={"pfNames": ["enp59s0f0#4-7"]})
    cluster.policy("pf1", 5, {"b": "1"}, resourceName="r_pf1", numVfs=2,
                   nicSelector={"vendor": "8086", "rootDevices": ["0000:3b:00.1"]})
    cluster.client.create(SRIOV_NETWORK_POOL_CONFIG, {"metadata": {"name": "rdma", "namespace": namespace},
                                                      "spec": {"nodeSelector": {"matchLabels": {"a": "1"}},
                                                               "rdmaMode": "exclusive"}})
    with node_policy_controller(kubeconfig, namespace, stale_delay_minutes=30):
        for node in (both, only_a, only_b, idle):
            state = wait_for(lambda n=node: cluster.state(n), what=f"NodeState {node}")
            assert state["metadata"]["ownerReferences"] == [{
                "apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovOperatorConfig", "name": "default",
                "uid": config["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
            assert not (state.get("spec") or {}).get("interfaces")  # no interfaces reported yet
        for node in (both, only_a, only_b, idle):
            cluster.report(node, IFACES)

        spec = wait_for(lambda: len(s := cluster.spec_interfaces(both)) == 2 and s, what="spec on 'both'")
        pf0, pf1 = spec
        assert pf0["pciAddress"] == "0000:3b:00.0" and pf0["name"] == "ens1f0"
        assert groups(pf0) == [("high", "4-7"), ("low", "0-3")]  # partitions kept; high applied last
        assert (pf0["numVfs"], pf0["mtu"]) == (16, 9000)  # merged: the larger of each
        assert groups(pf1) == [("pf1", "0-1")] and pf1["numVfs"] == 2
        (a0,) = wait_for(lambda: cluster.spec_interfaces(only_a), what="spec on 'only-a'")
        # the pool selecting label a=1 puts its RDMA mode into those nodes' specs only. Waited for: a node's
        # own sync can run before the informer's first list (served from the API server's watch cache)
        # shows the pool created just before the controller started; the pool's event then resyncs all.
        wait_for(lambda: [cluster.state(n)["spec"].get("system") for n in (both, only_a, only_b)] == [
            {"rdmaMode": "exclusive"}, {"rdmaMode": "exclusive"}, None], what="the pool's RDMA mode in its specs")
        assert groups(a0) == [("low", "0-3")] and (a0["numVfs"], a0["mtu"]) == (8, 1500)
        b = wait_for(lambda: len(s := cluster.spec_interfaces(only_b)) == 2 and s, what="spec on 'only-b'")
        assert [groups(i) for i in b] == [[("high", "4-7")], [("pf1", "0-1")]]
        assert cluster.spec_interfaces(idle) == []

        wait_for(lambda: cluster.label(idle) == "Disabled", what="idle node labelled Disabled")
        for node in (both, only_a, only_b):
            wait_for(lambda n=node: cluster.label(n) == "Enabled", what=f"{node} labelled Enabled")
        assert cluster.dp_config(idle) == '{"resourceList":null}'
        assert cluster.dp_config(only_a) == (
            '{"resourceList":[{"resourceName":"r_low","selectors":{"pfNames":["ens1f0#0-3"],'
            '"IsRdma":false,"NeedVhostNet":false},"SelectorObj":null}]}')
        # sorted by priority number descending: low (50), high (10), pf1 (5); the alt name is resolved once
        # the NodeState reports it (the ConfigMap is written just after the NodeStates of the same sync)
        expected = [("r_low", ["ens1f0#0-3"]), ("r_high", ["ens1f0#4-7"]), ("r_pf1", None)]
        entries = wait_for(lambda: [(e["resourceName"], e["selectors"].get("pfNames")) for e in
                                    json.loads(cluster.dp_config(both) or "")["resourceList"]] == expected
                           and json.loads(cluster.dp_config(both) or "")["resourceList"], what="config of 'both'")
        assert entries[2]["selectors"] == {"vendors": ["8086"], "rootDevices": ["0000:3b:00.1"], "IsRdma": False,
                                           "NeedVhostNet": False}
        cm = cluster.client.get(CONFIG_MAP, consts.DEVICE_PLUGIN_CONFIGMAP, namespace)
        assert cm["metadata"]["ownerReferences"][0]["uid"] == config["metadata"]["uid"]

        # deleting the high-priority policy gives 'both' back to 'low' alone
        cluster.client.delete(SRIOV_NETWORK_NODE_POLICY, "high", namespace)
        wait_for(lambda: groups(cluster.spec_interfaces(both)[0]) == [("low", "0-3")], what="high removed")
        pf0 = cluster.spec_interfaces(both)[0]
        assert (pf0["numVfs"], pf0["mtu"]) == (8, 1500)


def test_node_label_changes(kubeconfig: Path, namespace: str, cluster: Cluster) -> None:
    cluster.config()
    node = cluster.node("w", pool="a")
    cluster.policy("pa", 99, {"pool": "a"}, resourceName="ra", numVfs=4, nicSelector={"pfNames": ["ens1f0"]})
    cluster.policy("pb", 99, {"pool": "b"}, resourceName="rb", numVfs=2, nicSelector={"pfNames": ["ens1f1"]})
    with node_policy_controller(kubeconfig, namespace):
        cluster.report(node, IFACES)
        wait_for(lambda: [groups(i) for i in cluster.spec_interfaces(node)] == [[("pa", "0-3")]], what="pool a")
        wait_for(lambda: cluster.label(node) == "Enabled", what="Enabled")
        cluster.relabel(node, {"pool": "b"})
        wait_for(lambda: [groups(i) for i in cluster.spec_interfaces(node)] == [[("pb", "0-1")]], what="pool b")
        wait_for(lambda: json.loads(cluster.dp_config(node) or "")["resourceList"][0]["resourceName"] == "rb",
                 what="device plugin config follows")
        cluster.relabel(node, {"pool": None})
        wait_for(lambda: cluster.spec_interfaces(node) == [], what="no policy selects the node")
        wait_for(lambda: cluster.label(node) == "Disabled", what="Disabled")
        assert cluster.dp_config(node) == '{"resourceList":null}'
        # leaving configDaemonNodeSelector: the NodeState becomes stale and the plugin label is removed
        cluster.relabel(node, {RUN_LABEL: None})
        wait_for(lambda: cluster.label(node) is None, what="device-plugin label removed")
        keep = wait_for(lambda: (cluster.state(node)["metadata"].get("annotations") or {})
                        .get(consts.NODE_STATE_KEEP_UNTIL_ANNOTATION), what="keep-until annotation")
        assert keep.endswith("Z")
        # back in: the annotation is cleared and the NodeState kept
        cluster.relabel(node, {RUN_LABEL: cluster.run})
        wait_for(lambda: consts.NODE_STATE_KEEP_UNTIL_ANNOTATION
                 not in (cluster.state(node)["metadata"].get("annotations") or {}), what="annotation cleared")


def test_deleted_node_state_kept_until_delay(kubeconfig: Path, namespace: str, cluster: Cluster) -> None:
    cluster.config()
    node = cluster.node("gone")
    with node_policy_controller(kubeconfig, namespace, stale_delay_minutes=0.05):  # 3 seconds
        wait_for(lambda: cluster.state(node), what="NodeState")
        cluster.client.delete(NODE, node)
        keep = wait_for(lambda: (cluster.state(node)["metadata"].get("annotations") or {})
                        .get(consts.NODE_STATE_KEEP_UNTIL_ANNOTATION), what="keep-until annotation")
        marked = time.time()
        assert cluster.state(node)  # still there right after being marked
        wait_for(lambda: _gone(cluster, node), timeout=30, what="stale NodeState deleted after the delay")
        # it was not deleted before its keep-until time (1 s resolution of the RFC3339 stamp)
        until = calendar.timegm(time.strptime(keep, "%Y-%m-%dT%H:%M:%SZ"))
        assert time.time() >= until - 1, (marked, until)


def test_deleted_node_with_zero_delay(kubeconfig: Path, namespace: str, cluster: Cluster) -> None:
    cluster.config()
    node = cluster.node("zero")
    with node_policy_controller(kubeconfig, namespace, stale_delay_minutes=0):
        wait_for(lambda: cluster.state(node), what="NodeState")
        cluster.client.delete(NODE, node)
        wait_for(lambda: _gone(cluster, node), what="NodeState deleted at once")


def test_waits_for_operator_config(kubeconfig: Path, namespace: str, cluster: Cluster) -> None:
    node = cluster.node("w")
    with node_policy_controller(kubeconfig, namespace):
        time.sleep(1.5)
        assert _gone(cluster, node)  # nothing without SriovOperatorConfig default
        cluster.config()
        wait_for(lambda: cluster.state(node), timeout=20, what="NodeState once the config exists")


def _gone(cluster: Cluster, node: str) -> bool:
    try:
        cluster.state(node)
    except NotFound:
        return True
    return False
