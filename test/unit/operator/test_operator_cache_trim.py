"""The operator's informer transforms drop only fields no controller reads (pure logic, no host)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.controllers.node_policy_desired import sync_outcome
from sriovop.controllers.policy_status import policy_status
from sriovop.operator.cache_trim import CACHE_TRANSFORMS
from sriovop.runtime.kinds import NODE
from test.support.webhook_objects import NICS, node, node_state, policy


def test_node_keeps_metadata_and_spec_and_loses_status() -> None:
    node = {"metadata": {"name": "n1", "labels": {"a": "b"}, "annotations": {"x": "y"}},
            "spec": {"unschedulable": True}, "status": {"images": [{"names": ["img"], "sizeBytes": 1}]}}
    assert CACHE_TRANSFORMS[NODE](node) == {"metadata": {"name": "n1", "labels": {"a": "b"},
                                                         "annotations": {"x": "y"}},
                                            "spec": {"unschedulable": True}}


def test_node_state_keeps_only_the_pf_fields_the_controllers_read() -> None:
    read = {"name": "ens1f0", "altNames": ["enp59s0f0"], "pciAddress": "0000:3b:00.0", "vendor": "8086",
            "deviceID": "159b", "netFilter": "openstack/NetworkID:abc"}
    pf = {**read, "numVfs": 2, "totalvfs": 64, "mtu": 9000, "linkType": "ETH", "linkSpeed": "25000 Mb/s",
          "mac": "b4:96:91:00:00:01", "driver": "ice", "eSwitchMode": "legacy",
          "Vfs": [{"pciAddress": "0000:3b:01.0", "vfID": 0}, {"pciAddress": "0000:3b:01.1", "vfID": 1}]}
    state = {"metadata": {"name": "n1", "annotations": {"a": "b"}},
             "spec": {"interfaces": [{"name": "ens1f0", "numVfs": 2, "mtu": 9000}]},
             "status": {"syncStatus": "Failed", "lastSyncError": "e", "interfaces": [
                 pf, {"name": "eno1", "pciAddress": "0000:01:00.0", "mtu": 1500}]}}
    out = CACHE_TRANSFORMS[SRIOV_NETWORK_NODE_STATE](state)
    assert out["status"] == {"syncStatus": "Failed", "lastSyncError": "e",
                             "interfaces": [read, {"name": "eno1", "pciAddress": "0000:01:00.0"}]}
    assert out["spec"] == {"interfaces": [{"name": "ens1f0", "numVfs": 2, "mtu": 9000}]}
    assert out["metadata"] == {"name": "n1", "annotations": {"a": "b"}}


PF_NAMES = ["ens1f0", "ens1f1", "eno1"]
PCI = ["0000:3b:00.0", "0000:3b:00.1", "0000:5e:00.0"]


@st.composite
def pfs(draw: st.DrawFn) -> dict[str, Any]:
    """A reported PF with every field the daemon writes, the unread ones random too."""
    out: dict[str, Any] = {
        "name": draw(st.sampled_from(PF_NAMES)), "pciAddress": draw(st.sampled_from(PCI)),
        "vendor": draw(st.sampled_from(["8086", "15b3"])), "deviceID": draw(st.sampled_from(["158b", "1015", "101d"])),
        "totalvfs": draw(st.integers(0, 128)), "numVfs": draw(st.integers(0, 8)),
        "mtu": draw(st.sampled_from([1500, 9000])), "linkType": draw(st.sampled_from(["ETH", "IB"])),
        "linkSpeed": "25000 Mb/s", "mac": draw(st.sampled_from(["b4:96:91:00:00:01", "b4:96:91:00:00:02"])),
        "driver": draw(st.sampled_from(["ice", "mlx5_core"])),
        "eSwitchMode": draw(st.sampled_from(["legacy", "switchdev"])),
        "externallyManaged": draw(st.booleans()),
        "Vfs": [{"pciAddress": "0000:3b:01.0", "vfID": 0, "driver": "iavf"}] * draw(st.integers(0, 2)),
    }
    if draw(st.booleans()):
        out["altNames"] = draw(st.lists(st.sampled_from(["enp59s0f0", "enp59s0f1"]), max_size=2, unique=True))
    if draw(st.booleans()):
        out["netFilter"] = draw(st.sampled_from(["openstack/NetworkID:abc", "openstack/NetworkID:def"]))
    return out


@st.composite
def policies(draw: st.DrawFn, index: int) -> dict[str, Any]:
    nic: dict[str, Any] = {}
    for key, values in (("vendor", ["8086", "15b3"]), ("deviceID", ["158b", "1015", "101d"]),
                        ("rootDevices", [[p] for p in PCI]),
                        ("pfNames", [["ens1f0"], ["enp59s0f0#0-1"], ["ens1f1#2-3", "eno1"], ["enp59s0f1"]]),
                        ("netFilter", ["openstack/NetworkID:abc", "openstack/NetworkID:def"])):
        if draw(st.booleans()):
            nic[key] = draw(st.sampled_from(values))
    spec: dict[str, Any] = {
        "nicSelector": nic, "numVfs": draw(st.integers(0, 8)), "priority": draw(st.integers(0, 3)),
        "resourceName": draw(st.sampled_from(["intelnics", "mlxnics"])),
        "deviceType": draw(st.sampled_from(["netdevice", "vfio-pci"])), "mtu": draw(st.sampled_from([0, 9000])),
        "isRdma": draw(st.booleans()), "linkType": draw(st.sampled_from(["", "eth", "ib"])),
        "eSwitchMode": draw(st.sampled_from(["", "legacy", "switchdev"])),
        "externallyManaged": draw(st.booleans()),
        "nodeSelector": draw(st.sampled_from([{"node-role.kubernetes.io/worker": ""}, {"zone": "a"}])),
    }
    if draw(st.booleans()):
        spec["bridge"] = {"ovs": {"bridge": {"datapathType": "netdev"}}}
    return policy(f"p{index}", **spec)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], list[dict[str, Any]]]:
    nodes, states = [], {}
    for i in range(draw(st.integers(1, 5))):
        name = f"n{i}"
        nodes.append(node(name, {"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux",
                                 "zone": draw(st.sampled_from(["a", "b"]))}))
        if draw(st.integers(0, 4)):
            states[name] = node_state(name, draw(st.lists(pfs(), max_size=3)))
    count = draw(st.integers(0, 4))
    return nodes, states, [draw(policies(i)) for i in range(count)]


def _outcome(config: dict[str, Any], policy_list: list[dict[str, Any]], nodes: list[dict[str, Any]],
             states: dict[str, dict[str, Any]]) -> Any:
    out = sync_outcome(config, policy_list, nodes, states, [], NICS)
    return ([(n.name, n.spec, n.error) for n in out.nodes], out.device_plugin, out.device_plugin_enabled,
            out.errors, out.stale, [policy_status(p, nodes, states) for p in policy_list])


@settings(max_examples=300, deadline=None)
@given(clusters(), st.booleans())
def test_every_sync_outcome_and_policy_status_is_the_same_from_trimmed_node_states(
        cluster: tuple[list[dict[str, Any]], dict[str, dict[str, Any]], list[dict[str, Any]]], bridges: bool) -> None:
    """What the operator computes from its cache (specs, device-plugin config, errors, policy
    statuses) does not depend on the fields the transform drops."""
    nodes, states, policy_list = cluster
    config = {"spec": {"featureGates": {consts.FG_MANAGE_SOFTWARE_BRIDGES: bridges}}}
    trimmed = {name: CACHE_TRANSFORMS[SRIOV_NETWORK_NODE_STATE](copy.deepcopy(state))
               for name, state in states.items()}
    assert _outcome(config, policy_list, nodes, trimmed) == _outcome(config, policy_list, nodes, states)


def test_node_state_without_status_is_unchanged() -> None:
    assert CACHE_TRANSFORMS[SRIOV_NETWORK_NODE_STATE]({"metadata": {"name": "n1"}}) == {"metadata": {"name": "n1"}}


def test_node_states_of_one_model_and_policy_share_their_spec_status_and_owner() -> None:
    def state(name: str, mac: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "uid": f"uid-{name}", "annotations": {"d": "Idle"},
                             "ownerReferences": [{"kind": "SriovOperatorConfig", "name": "default", "uid": "u"}]},
                "spec": {"interfaces": [{"name": "ens1f0", "numVfs": 8, "pciAddress": "0000:3b:00.0"}]},
                "status": {"syncStatus": "Succeeded", "interfaces": [
                    {"name": "ens1f0", "pciAddress": "0000:3b:00.0", "vendor": "8086", "deviceID": "159b",
                     "mac": mac}]}}

    a = CACHE_TRANSFORMS[SRIOV_NETWORK_NODE_STATE](state("n1", "b4:96:91:00:00:01"))
    b = CACHE_TRANSFORMS[SRIOV_NETWORK_NODE_STATE](state("n2", "b4:96:91:00:00:02"))
    assert a["status"] is b["status"], "the MAC the operator does not read is gone, the rest is equal"
    assert a["spec"] is b["spec"]
    assert a["metadata"]["ownerReferences"] is b["metadata"]["ownerReferences"]
    assert a["metadata"]["annotations"] is b["metadata"]["annotations"]
    assert a["metadata"] is not b["metadata"] and a["metadata"]["uid"] == "uid-n1"
    c = state("n3", "b4:96:91:00:00:03")
    c["spec"]["interfaces"][0]["numVfs"] = 16
    c = CACHE_TRANSFORMS[SRIOV_NETWORK_NODE_STATE](c)
    assert c["spec"]["interfaces"][0]["numVfs"] == 16 and c["spec"] is not a["spec"]
    assert c["status"] is a["status"]
