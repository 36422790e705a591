"""Every policy rule of the reference, judged through the validating endpoint with in-memory clusters."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sriovop.webhook.cluster_view import StaticClusterView
from sriovop.webhook.handler import VALIDATING_PATH, AdmissionHandler
from sriovop.webhook.settings import WebhookSettings
from test.support.webhook_objects import (
    NICS,
    OPERATOR_NS,
    SETTINGS,
    default_cluster,
    iface,
    intel_xxv710,
    node,
    node_state,
    policy,
    review,
)


def judge(obj: dict[str, Any], view: StaticClusterView | None = None, operation: str = "CREATE",
          settings: WebhookSettings = SETTINGS, old: dict[str, Any] | None = None) -> dict[str, Any]:
    handler = AdmissionHandler(view or default_cluster(), settings)
    body = review(obj["kind"], None if operation == "DELETE" else obj, operation,
                  old=obj if operation == "DELETE" else old)
    status, answer = handler.handle(VALIDATING_PATH, json.dumps(body).encode())
    assert status == 200
    assert answer["response"]["uid"] == body["request"]["uid"]
    return answer["response"]


def assert_denied(response: dict[str, Any], field: str, fragment: str, name: str = "p1") -> None:
    assert response["allowed"] is False, response
    message = response["status"]["message"]
    assert f'SriovNetworkNodePolicy "{OPERATOR_NS}/{name}"' in message or f"/{name}\"" in message, message
    assert f": {field}: " in message, message
    assert fragment in message, message


# (id, spec overrides, field, message fragment) — static rules
STATIC_DENIALS = [
    ("resource-name-chars", {"resourceName": "intel.nics"}, "spec.resourceName", "contains invalid characters"),
    ("resource-name-leading-dash", {"resourceName": "-nics"}, "spec.resourceName", "invalid characters"),
    ("resource-name-trailing-underscore", {"resourceName": "nics_"}, "spec.resourceName", "invalid characters"),
    ("resource-name-too-long", {"resourceName": "a" * 64}, "spec.resourceName", "at most 63"),
    ("resource-name-empty", {"resourceName": ""}, "spec.resourceName", "must not be empty"),
    ("nic-selector-empty", {"nicSelector": {}}, "spec.nicSelector", "at least one of these parameters"),
    ("net-filter-with-vendor", {"nicSelector": {"netFilter": "openstack/NetworkID:abc", "vendor": "8086"}},
     "spec.nicSelector.netFilter", "can't be combined"),
    ("net-filter-with-eswitch", {"nicSelector": {"netFilter": "openstack/NetworkID:abc"}, "eSwitchMode": "legacy"},
     "spec.eSwitchMode", "netFilter"),
    ("net-filter-with-ib", {"nicSelector": {"netFilter": "openstack/NetworkID:abc"}, "linkType": "ib"},
     "spec.linkType", "only eth"),
    ("unsupported-vendor", {"nicSelector": {"vendor": "1234"}}, "spec.nicSelector.vendor",
     "vendor 1234 is not supported"),
    ("unsupported-model", {"nicSelector": {"vendor": "8086", "deviceID": "1528"}}, "spec.nicSelector.deviceID",
     "vendor/device 8086/1528 is not supported"),
    ("unsupported-device", {"nicSelector": {"deviceID": "ffff"}}, "spec.nicSelector.deviceID",
     "device ffff is not supported"),
    ("pfnames-two-hashes", {"nicSelector": {"pfNames": ["ens1f0#0-1#2"]}}, "spec.nicSelector.pfNames[0]",
     "must contain at most one '#'"),
    ("pfnames-no-dash", {"nicSelector": {"pfNames": ["ens1f0#3"]}}, "spec.nicSelector.pfNames[0]",
     "with exactly one '-'"),
    ("pfnames-bad-start", {"nicSelector": {"pfNames": ["ens1f0#a-3"]}}, "spec.nicSelector.pfNames[0]",
     "the first index of the VF range 'a' is not a non-negative integer"),
    ("pfnames-bad-end", {"nicSelector": {"pfNames": ["ens1f1", "ens1f0#0-x"]}}, "spec.nicSelector.pfNames[1]",
     "the last index of the VF range 'x' is not a non-negative integer"),
    ("pfnames-reversed", {"nicSelector": {"pfNames": ["ens1f0#3-1"]}}, "spec.nicSelector.pfNames[0]",
     "the last VF index 1 is smaller than the first 3"),
    ("pfnames-end-not-below-numvfs", {"numVfs": 4, "nicSelector": {"pfNames": ["ens1f0#0-4"]}},
     "spec.nicSelector.pfNames[0]", "the last VF index 4 must be lower than numVfs 4"),
    ("vfio-with-rdma", {"deviceType": "vfio-pci", "isRdma": True}, "spec.isRdma",
     "'deviceType: vfio-pci' conflicts with 'isRdma: true'"),
    ("switchdev-ib", {"eSwitchMode": "switchdev", "linkType": "IB"}, "spec.eSwitchMode",
     "can be used only with ethernet links"),
    ("vdpa-vfio", {"vdpaType": "virtio", "deviceType": "vfio-pci", "eSwitchMode": "switchdev"}, "spec.vdpaType",
     "'deviceType: vfio-pci' conflicts with 'virtio'"),
    ("vdpa-legacy", {"vdpaType": "vhost"}, "spec.vdpaType", "vdpa requires the device to be configured in switchdev"),
    ("bridge-legacy", {"bridge": {"ovs": {}}}, "spec.bridge", "requires the device to be configured in switchdev"),
    ("bridge-external", {"bridge": {"ovs": {}}, "eSwitchMode": "switchdev", "externallyManaged": True},
     "spec.bridge", "can't be used when the device externally managed"),
    ("numvfs-wrong-type", {"numVfs": "4"}, "spec.numVfs", "must be an integer"),
    ("numvfs-negative", {"numVfs": -1}, "spec.numVfs", "must not be negative"),
    ("priority-range", {"priority": 100}, "spec.priority", "out of range"),
    ("device-type-enum", {"deviceType": "igb"}, "spec.deviceType", "unsupported value 'igb'"),
    ("node-selector-type", {"nodeSelector": {"a": 1}}, "spec.nodeSelector.a", "must be a string"),
    ("pfnames-type", {"nicSelector": {"pfNames": "ens1f0"}}, "spec.nicSelector.pfNames", "list of strings"),
]


@pytest.mark.parametrize(("overrides", "field", "fragment"), [r[1:] for r in STATIC_DENIALS],
                         ids=[r[0] for r in STATIC_DENIALS])
def test_static_rule_denies(overrides: dict[str, Any], field: str, fragment: str) -> None:
    assert_denied(judge(policy(**overrides)), field, fragment)


def test_dev_mode_admits_unsupported_nic_models() -> None:
    dev = WebhookSettings(namespace=OPERATOR_NS, dev_mode=True)
    view = StaticClusterView([node("w")], [node_state("w", [iface("eth9", "0000:01:00.0", "1234", "5678")])],
                             nics=NICS)
    response = judge(policy(nicSelector={"vendor": "1234", "deviceID": "5678"}), view, settings=dev)
    assert response["allowed"] is True, response
    assert_denied(judge(policy(nicSelector={"vendor": "1234", "deviceID": "5678"}), view), "spec.nicSelector.vendor",
                  "not supported")


# --- dynamic rules -------------------------------------------------------------------------------

def test_no_node_matches_the_node_selector() -> None:
    assert_denied(judge(policy(nodeSelector={"zone": "nowhere"})), "spec.nodeSelector",
                  "no matched node is selected by the nodeSelector in CR p1")


def test_no_supported_nic_selected_explains_why() -> None:
    response = judge(policy(nicSelector={"pfNames": ["ens9f9"]}))
    assert_denied(response, "spec.nicSelector", "no supported NIC is selected by the nicSelector in CR p1")
    assert ("(node worker-0: ens1f0: interface ens1f0 is not among pfNames, ens1f1: interface ens1f1 is not among "
            "pfNames") in response["status"]["message"]


def test_selected_node_without_node_state_selects_nothing() -> None:
    view = StaticClusterView([node("w")], [], nics=NICS)
    assert_denied(judge(policy(), view), "spec.nicSelector", "no selected node reports any interface")


def test_unsupported_model_in_status_is_not_selected() -> None:
    view = StaticClusterView([node("w")], [node_state("w", [iface("ens1f0", "0000:01:00.0", "8086", "1528")])],
                             nics=NICS)
    assert_denied(judge(policy(), view), "spec.nicSelector", "not in the supported NIC list")


def test_virtual_platform_accepts_vf_model_with_equal_net_filter() -> None:
    net = "openstack/NetworkID:3f1c"
    vf = iface("eth1", "0000:00:05.0", "15b3", "101e", net_filter=net)
    view = StaticClusterView([node("vm", provider_id="openstack:///abc")], [node_state("vm", [vf])], nics=NICS)
    assert judge(policy(nicSelector={"netFilter": net}, numVfs=1), view)["allowed"] is True
    baremetal = StaticClusterView([node("vm")], [node_state("vm", [vf])], nics=NICS)
    assert_denied(judge(policy(nicSelector={"netFilter": net}, numVfs=1), baremetal), "spec.nicSelector",
                  "no supported NIC")


def test_net_filter_only_policy_on_a_node_with_supported_pfs_is_admitted_like_upstream() -> None:
    """Upstream's webhook leaves netFilter out of its NIC match: the policy selects the node's supported
    PFs (the device-plugin config then narrows it to PFs whose status netFilter matches)."""
    pf = iface("ens1f0", "0000:01:00.0", "8086", "158a", totalvfs=64)
    view = StaticClusterView([node("w")], [node_state("w", [pf])], nics=NICS)
    response = judge(policy(nicSelector={"netFilter": "openstack/NetworkID:3f1c"}, numVfs=4), view)
    assert response["allowed"] is True, response
    # ...and the selected PFs are judged like any selected PF (Intel: numVfs <= totalvfs).
    assert_denied(judge(policy(nicSelector={"netFilter": "openstack/NetworkID:3f1c"}, numVfs=65), view),
                  "spec.numVfs", "exceed the maximum allowed value(64)")


def test_zero_vfs_on_a_selected_nic() -> None:
    assert_denied(judge(policy(numVfs=0)), "spec.numVfs", "numVfs(0) in CR p1 is not allowed")


def test_intel_numvfs_above_totalvfs() -> None:
    assert_denied(judge(policy(numVfs=65)), "spec.numVfs",
                  "numVfs(65) in CR p1 exceed the maximum allowed value(64) interface(ens1f0)")


def test_mellanox_capped_at_128_not_totalvfs() -> None:
    allowed = judge(policy(numVfs=100, nicSelector={"pfNames": ["ens2f0"]}))
    assert allowed["allowed"] is True, allowed
    assert_denied(judge(policy(numVfs=129, nicSelector={"pfNames": ["ens2f0"]})), "spec.numVfs",
                  "exceed the maximum allowed value(128)")


def _external_view() -> StaticClusterView:
    pf = intel_xxv710(numvfs=8, mtu=9000)
    return StaticClusterView([node("w")], [node_state("w", [pf])], nics=NICS)


@pytest.mark.parametrize(("overrides", "field", "fragment"), [
    ({"numVfs": 9}, "spec.numVfs", "higher than the virtual functions allocated for the PF externally value(8)"),
    ({"mtu": 9216}, "spec.mtu", "MTU(9216) in CR p1 is higher than the MTU for the PF externally value(9000)"),
    ({"linkType": "ib"}, "spec.linkType", "LinkType(ib) in CR p1 is not equal to the LinkType for the PF"),
])
def test_externally_managed_limits(overrides: dict[str, Any], field: str, fragment: str) -> None:
    assert_denied(judge(policy(externallyManaged=True, **overrides), _external_view()), field, fragment)
    assert judge(policy(externallyManaged=True, numVfs=8, mtu=9000, linkType="eth"), _external_view())["allowed"]


def test_vdpa_only_on_mellanox() -> None:
    spec = {"vdpaType": "virtio", "eSwitchMode": "switchdev"}
    assert_denied(judge(policy(**spec)), "spec.vdpaType", "vendor(8086) in CR p1 not supported for vdpa")
    assert judge(policy(nicSelector={"pfNames": ["ens2f0"]}, **spec))["allowed"] is True


@pytest.mark.parametrize(("mine", "theirs", "field", "fragment"), [
    ({"nicSelector": {"pfNames": ["ens1f0#0-3"]}}, {"nicSelector": {"pfNames": ["ens1f0#2-7"]}, "numVfs": 8},
     "spec.nicSelector.pfNames[0]",
     "VF index range in ens1f0#0-3 is overlapped with existing policy other (ens1f0#2-7) (node w, PF ens1f0)"),
    ({"nicSelector": {"pfNames": ["ens1f0"]}}, {"nicSelector": {"pfNames": ["ens1f0"]}},
     "spec.nicSelector.pfNames[0]", "overlapped with existing policy other"),
    ({"nicSelector": {"pfNames": ["enp59s0f0#0-1"]}}, {"nicSelector": {"pfNames": ["ens1f0#1-2"]}},
     "spec.nicSelector.pfNames[0]", "overlapped with existing policy other (ens1f0#1-2) (node w, PF ens1f0)"),
    ({"nicSelector": {"pfNames": ["ens1f0#0-1"]}, "externallyManaged": True},
     {"nicSelector": {"pfNames": ["ens1f0#2-3"]}}, "spec.externallyManaged",
     "externallyManage is inconsistent with existing policy other on PF ens1f0 of node w"),
    ({"nicSelector": {"rootDevices": ["0000:3b:00.0"]}}, {"nicSelector": {"rootDevices": ["0000:3b:00.0"]}},
     "spec.nicSelector.rootDevices[0]",
     "root device 0000:3b:00.0 is overlapped with existing policy other (PF 0000:3b:00.0 on node w)"),
    ({"nicSelector": {"pfNames": ["ens1f0#0-1"]}, "excludeTopology": True},
     {"nicSelector": {"pfNames": ["ens1f1"]}, "excludeTopology": False}, "spec.excludeTopology",
     "excludeTopology[true] field conflicts with policy [other].ExcludeTopology[false]"),
])
def test_conflicts_with_other_policies(mine: dict[str, Any], theirs: dict[str, Any], field: str,
                                       fragment: str) -> None:
    external = {"externallyManaged": True}
    ifaces = [intel_xxv710(alt_names=["enp59s0f0"], numvfs=8), intel_xxv710("ens1f1", "0000:3b:00.1")]
    view = StaticClusterView([node("w")], [node_state("w", ifaces)], [policy("other", **theirs)], nics=NICS)
    if mine.get("externallyManaged"):
        mine = {**mine, **external}
    assert_denied(judge(policy(**mine), view), field, fragment)


def test_disjoint_ranges_on_one_pf_and_policies_on_other_nodes_are_fine() -> None:
    other = policy("other", numVfs=8, nicSelector={"pfNames": ["ens1f0#4-7"]})
    elsewhere = policy("elsewhere", nodeSelector={"zone": "b"}, nicSelector={"pfNames": ["ens1f0"]})
    view = default_cluster([other, elsewhere])
    assert judge(policy(numVfs=8, nicSelector={"pfNames": ["ens1f0#0-3"]}), view)["allowed"] is True


def test_upstream_quirk_ranged_and_unranged_entries_do_not_overlap() -> None:
    other = policy("other", numVfs=8, nicSelector={"pfNames": ["ens1f0#0-3"]})
    assert judge(policy(nicSelector={"pfNames": ["ens1f0"]}), default_cluster([other]))["allowed"] is True


def test_update_is_not_judged_against_its_own_stored_copy() -> None:
    stored = policy(nicSelector={"pfNames": ["ens1f0#0-3"]})
    view = default_cluster([stored])
    assert judge(policy(nicSelector={"pfNames": ["ens1f0#0-2"]}), view, operation="UPDATE", old=stored)["allowed"]


def test_same_resource_name_same_exclude_topology_is_fine() -> None:
    other = policy("other", nicSelector={"pfNames": ["ens1f1"]})
    assert judge(policy(), default_cluster([other]))["allowed"] is True


# --- scope ---------------------------------------------------------------------------------------

def test_policy_outside_operator_namespace_gets_a_warning() -> None:
    response = judge(policy(namespace="elsewhere"))
    assert response["allowed"] is True
    assert response["warnings"] == [
        f"p1 is created or updated but not used. Only policy in {OPERATOR_NS} namespace is respected."
    ]


def test_default_policy_and_delete_are_never_judged() -> None:
    assert judge(policy("default", numVfs=0, resourceName="bad name"))["allowed"] is True
    assert judge(policy(numVfs=0, resourceName="bad name"), operation="DELETE")["allowed"] is True


def test_updates_of_objects_being_deleted_are_never_blocked() -> None:
    doomed = policy(numVfs=0)
    doomed["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert judge(doomed, operation="UPDATE", old=doomed)["allowed"] is True
    assert judge(policy(numVfs=0), operation="UPDATE", old=policy())["allowed"] is False


def test_valid_policies_are_allowed_without_warnings() -> None:
    for spec in (
        {},
        {"nicSelector": {"vendor": "8086", "deviceID": "158a"}, "numVfs": 64},
        {"nicSelector": {"rootDevices": ["0000:3b:00.1"]}, "deviceType": "vfio-pci"},
        {"nicSelector": {"pfNames": ["enp59s0f0#0-3"]}, "mtu": 9000},
        {"nicSelector": {"pfNames": ["ens2f0"]}, "linkType": "ib", "isRdma": True},
        {"nicSelector": {"pfNames": ["ens2f0"]}, "eSwitchMode": "switchdev", "bridge": {"ovs": {}}},
    ):
        response = judge(policy(**spec))
        assert response["allowed"] is True, (spec, response)
        assert "warnings" not in response


def test_memoised_peers_follow_object_replacement_and_skip_plain_dicts() -> None:
    from sriovop.runtime.objects import FrozenDict
    from sriovop.webhook import policy_peers

    mine = policy(numVfs=8, nicSelector={"pfNames": ["ens1f0#0-1"]})
    before = default_cluster([policy("other", numVfs=8, nicSelector={"pfNames": ["ens1f0#0-3"]})])
    after = default_cluster([policy("other", numVfs=8, nicSelector={"pfNames": ["ens1f0#4-7"]})])
    for _ in range(2):
        assert_denied(judge(mine, before), "spec.nicSelector.pfNames[0]", "overlapped with existing policy other")
        assert judge(mine, after)["allowed"] is True
    assert all(type(obj) is FrozenDict for obj, _ in policy_peers._PEER_CACHE.values())
    assert all(type(entry[0]) is FrozenDict for entry in policy_peers._ALIAS_CACHE.values())
