"""The policy Apply merge: priority order, VF groups from pfNames ranges, mtu/numVfs merging."""

from __future__ import annotations

from typing import Any

import pytest

from sriovop.controllers.node_policy_apply import (
    PolicyError,
    desired_interfaces,
    sort_policies,
    vf_ranges_overlap,
)

NODE = {"metadata": {"name": "w0", "labels": {"sriov": "true"}}}
IFACES = [
    {"name": "ens1f0", "altNames": ["enp59s0f0"], "pciAddress": "0000:3b:00.0", "vendor": "8086",
     "deviceID": "158b", "totalvfs": 64, "mtu": 1500},
    {"name": "ens1f1", "pciAddress": "0000:3b:00.1", "vendor": "8086", "deviceID": "158b", "totalvfs": 64},
]


def policy(name: str, priority: int, num_vfs: int, nic: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"priority": priority, "numVfs": num_vfs, "nicSelector": nic, "nodeSelector": {"sriov": "true"},
                     "resourceName": spec.pop("resourceName", name), "deviceType": "netdevice", **spec}}


def apply(*policies: dict[str, Any]) -> list[dict[str, Any]]:
    return desired_interfaces(sort_policies(policies), NODE, IFACES)


def test_sort_is_priority_descending_then_name_and_skips_default() -> None:
    ps = [policy("b", 10, 1, {}), policy("a", 10, 1, {}), policy("z", 99, 1, {}), policy("default", 5, 1, {}),
          policy("x", 0, 1, {})]
    assert [p["metadata"]["name"] for p in sort_policies(ps)] == ["z", "a", "b", "x"]


def test_single_policy_full_range_and_fields() -> None:
    out = apply(policy("p", 99, 8, {"pfNames": ["ens1f0"]}, mtu=9000, linkType="eth", isRdma=True))
    assert out == [{
        "pciAddress": "0000:3b:00.0", "numVfs": 8, "mtu": 9000, "name": "ens1f0", "linkType": "eth",
        "vfGroups": [{"resourceName": "p", "deviceType": "netdevice", "vfRange": "0-7", "policyName": "p",
                      "mtu": 9000, "isRdma": True}],
    }]


def test_numvfs_zero_contributes_nothing() -> None:
    assert apply(policy("p", 99, 0, {"vendor": "8086"})) == []


def test_empty_selector_and_unselected_node_match_nothing() -> None:
    assert apply(policy("p", 99, 4, {})) == []
    other = policy("p", 99, 4, {"vendor": "8086"})
    other["spec"]["nodeSelector"] = {"sriov": "false"}
    assert apply(other) == []


def test_partitions_of_one_pf_merge_groups_and_take_max() -> None:
    low = policy("low", 20, 8, {"pfNames": ["ens1f0#0-3"]}, mtu=1500)
    high = policy("high", 10, 16, {"pfNames": ["enp59s0f0#4-7"]}, mtu=9000)  # alt name
    (iface,) = apply(low, high)
    assert iface["numVfs"] == 16 and iface["mtu"] == 9000
    assert [(g["policyName"], g["vfRange"]) for g in iface["vfGroups"]] == [("high", "4-7"), ("low", "0-3")]


def test_overlapping_ranges_higher_priority_replaces() -> None:
    low = policy("low", 20, 16, {"pfNames": ["ens1f0#0-7"]}, mtu=9000)
    high = policy("high", 10, 8, {"pfNames": ["ens1f0#4-7"]}, mtu=1500)
    (iface,) = apply(low, high)
    # nothing kept and priorities differ: the new entry replaces the old one entirely
    assert iface["numVfs"] == 8 and iface["mtu"] == 1500
    assert [g["policyName"] for g in iface["vfGroups"]] == ["high"]


def test_equal_priority_takes_max_even_when_replacing() -> None:
    a = policy("a", 50, 16, {"vendor": "8086"}, mtu=9000, resourceName="same")
    b = policy("b", 50, 4, {"vendor": "8086"}, mtu=1500, resourceName="same")
    out = apply(a, b)
    assert [(i["numVfs"], i["mtu"], [g["policyName"] for g in i["vfGroups"]]) for i in out] == \
        [(16, 9000, ["b"]), (16, 9000, ["b"])]


def test_same_resource_name_group_is_replaced() -> None:
    a = policy("a", 20, 8, {"pfNames": ["ens1f0#0-1"]}, resourceName="r")
    b = policy("b", 10, 8, {"pfNames": ["ens1f0#2-3"]}, resourceName="r")
    (iface,) = apply(a, b)
    assert [g["vfRange"] for g in iface["vfGroups"]] == ["2-3"]


def test_externally_managed_and_eswitch_copied() -> None:
    (iface, _) = apply(policy("p", 99, 4, {"vendor": "8086"}, externallyManaged=True, eSwitchMode="switchdev"))
    assert iface["externallyManaged"] is True and iface["eSwitchMode"] == "switchdev"


def test_bad_pf_range_names_policy_and_entry() -> None:
    with pytest.raises(PolicyError, match=r"SriovNetworkNodePolicy p: spec.nicSelector.pfNames entry 'ens1f0#3'"):
        apply(policy("p", 99, 4, {"pfNames": ["ens1f0#3"]}))


@pytest.mark.parametrize(("a", "b", "want"), [
    ("0-3", "4-7", False), ("0-7", "4-5", True), ("4-5", "0-7", True), ("2-3", "3-9", True), ("5-9", "0-4", False),
    ("bad", "0-1", False),
])
def test_vf_range_overlap(a: str, b: str, want: bool) -> None:
    assert vf_ranges_overlap(a, b) is want
