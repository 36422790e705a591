from __future__ import annotations

from typing import Any

import pytest

from sriovop.api.v1.nicselector import is_empty_selector, netfilter_matches, nic_selector_matches, selected_interfaces

IFACE: dict[str, Any] = {
    "name": "ens1f0", "altNames": ["enp59s0f0"], "pciAddress": "0000:3b:00.0",
    "vendor": "8086", "deviceID": "158b", "totalvfs": 64,
}


@pytest.mark.parametrize(("selector", "matches"), [
    ({"vendor": "8086"}, True),
    ({"vendor": "15b3"}, False),
    ({"vendor": "8086", "deviceID": "158b"}, True),
    ({"vendor": "8086", "deviceID": "1572"}, False),
    ({"deviceID": "158b"}, True),
    ({"rootDevices": ["0000:3b:00.1", "0000:3b:00.0"]}, True),
    ({"rootDevices": ["0000:3b:00.1"]}, False),
    ({"pfNames": ["ens1f0"]}, True),
    ({"pfNames": ["ens1f0#0-3"]}, True),
    ({"pfNames": ["enp59s0f0#4-7"]}, True),  # alternative names select too
    ({"pfNames": ["ens1f1", "ens2f0#0-1"]}, False),
    ({"pfNames": ["ens1"]}, False),  # no prefix matching
    ({"vendor": "8086", "pfNames": ["ens1f0"], "rootDevices": ["0000:3b:00.1"]}, False),  # ANDed
    ({"vendor": "8086", "deviceID": "158b", "pfNames": ["ens1f0"], "rootDevices": ["0000:3b:00.0"]}, True),
    ({"vendor": "8086", "netFilter": "openstack/NetworkID:abc"}, False),
    ({}, False),
    ({"pfNames": [], "vendor": ""}, False),
    (None, False),
])
def test_nic_selector_matches(selector: dict[str, Any] | None, matches: bool) -> None:
    assert nic_selector_matches(selector, IFACE) is matches


def test_vendor_and_device_compare_exactly() -> None:
    assert not nic_selector_matches({"vendor": "8086", "deviceID": "158B"}, IFACE)


def test_netfilter_compares_both_halves_around_the_first_colon() -> None:
    vf = {"name": "eth1", "pciAddress": "0000:00:05.0", "netFilter": "openstack/NetworkID:ada9ec67-2c97"}
    assert nic_selector_matches({"netFilter": "openstack/NetworkID:ada9ec67-2c97"}, vf)
    assert nic_selector_matches({"netFilter": " openstack/NetworkID : ada9ec67-2c97 "}, vf)
    assert not nic_selector_matches({"netFilter": "openstack/NetworkID:other"}, vf)
    assert not nic_selector_matches({"netFilter": "aws/NetworkID:ada9ec67-2c97"}, vf)
    assert not netfilter_matches("openstack/NetworkID", "openstack/NetworkID")
    assert netfilter_matches("aws/NetworkID:subnet-1:x", "aws/NetworkID:subnet-1:x")
    assert not netfilter_matches("aws/NetworkID:subnet-1", "")


def test_empty_selector_detection() -> None:
    assert is_empty_selector({}) and is_empty_selector(None) and is_empty_selector({"pfNames": []})
    assert not is_empty_selector({"rootDevices": ["0000:00:01.0"]})


def test_selected_interfaces_of_a_node_state() -> None:
    other = {"name": "ens2f0", "pciAddress": "0000:5e:00.0", "vendor": "15b3", "deviceID": "101d"}
    state = {"status": {"interfaces": [IFACE, other]}}
    assert selected_interfaces({"vendor": "15b3"}, state) == [other]
    assert selected_interfaces({"vendor": "15b3"}, {"status": {}}) == []
    assert selected_interfaces({"vendor": "15b3"}, {}) == []
