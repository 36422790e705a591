from __future__ import annotations

from sriovop.api.v1 import accessors
from sriovop.api.v1.nicselector import interface_names
from sriovop.api.v1.selectors import node_labels
from test.support.api_samples import sample


def test_typed_views_return_the_same_dicts_without_copying() -> None:
    policy = sample("SriovNetworkNodePolicy", "policy-netdevice")
    spec = accessors.policy_spec(policy)
    assert spec is policy["spec"] and spec["numVfs"] == 16
    net = sample("SriovNetwork")
    assert accessors.sriov_network_spec(net)["vlan"] == 100
    assert accessors.sriov_ib_network_spec(sample("SriovIBNetwork"))["linkState"] == "enable"
    assert accessors.ovs_network_spec(sample("OVSNetwork"))["trunk"][1] == {"id": 300}
    assert accessors.operator_config_spec(sample("SriovOperatorConfig"))["logLevel"] == 2
    assert accessors.pool_config_spec(sample("SriovNetworkPoolConfig", "pool-workers"))["maxUnavailable"] == "25%"
    assert accessors.nad_spec({"spec": {"config": "{}"}})["config"] == "{}"


def test_node_state_views() -> None:
    state = sample("SriovNetworkNodeState")
    assert accessors.node_state_spec(state)["interfaces"][0]["vfGroups"][0]["vfRange"] == "0-3"
    (iface,) = accessors.node_state_interfaces(state)
    assert iface["totalvfs"] == 64 and iface["Vfs"][0]["Vlan"] == 0
    assert accessors.node_state_status(state)["syncStatus"] == "Succeeded"
    assert accessors.node_state_interfaces({"metadata": {"name": "fresh"}}) == []
    assert accessors.node_state_interfaces({"status": None}) == []
    assert interface_names(iface) == ["ens1f0", "enp59s0f0"]
    assert interface_names({"pciAddress": "x"}) == []


def test_conditions() -> None:
    ready = {"type": "Ready", "status": "True", "reason": "NetworkReady", "message": "",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}
    obj = {"status": {"conditions": [ready]}}
    assert accessors.conditions(obj) == [ready]
    assert accessors.find_condition(obj, "Ready") is ready
    assert accessors.find_condition(obj, "Degraded") is None
    assert accessors.conditions({}) == []


def test_node_labels() -> None:
    assert node_labels({"metadata": {"labels": {"a": "b"}}}) == {"a": "b"}
    assert node_labels({"metadata": {"name": "n"}}) == {}
    assert node_labels({}) == {}
