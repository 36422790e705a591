"""Selectors and pools (host: none; devices described directly): every selector field filters, `#` ranges
pick VF indexes, and a device joins only the first selector that claims it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sriovop.deviceplugin.config import parse_config
from sriovop.deviceplugin.devices import NetDevice
from sriovop.deviceplugin.pools import build_pools

PF = dict(vendor="8086", device="154c", driver="iavf", pf_name="ens1f0", pf_pci="0000:3b:00.0", link_type="ether")
VFS = [NetDevice(pci=f"0000:3b:02.{i}", vf_index=i, netdev=f"ens1f0v{i}", **PF) for i in range(8)]  # type: ignore[arg-type]
OTHER = replace(VFS[0], pci="0000:5e:02.0", pf_name="ENS2F0", pf_pci="0000:5e:00.0", vendor="15b3", device="101e",
                driver="mlx5_core", rdma_devices=("mlx5_2",), pkeys=("0x7fff",), link_type="infiniband",
                acpi_index="7", ddp_profile="ICE COMMS Package", vdpa_type="vhost")
PLAIN = NetDevice(pci="0000:01:00.0", vendor="8086", device="1533", driver="igb", netdev="eno1", link_type="ether")
DEVICES = [*VFS, OTHER, PLAIN]


def selected(selector: dict[str, object]) -> list[str]:
    text = json.dumps({"resourceList": [{"resourceName": "r", "selectors": [selector]}]})
    [pool] = build_pools(parse_config(text, "p"), DEVICES)
    return list(pool.devices)


@pytest.mark.parametrize(("selector", "expected"), [
    ({}, [d.pci for d in DEVICES]),
    ({"vendors": ["15b3"]}, ["0000:5e:02.0"]),
    ({"devices": ["1533"]}, ["0000:01:00.0"]),
    ({"drivers": ["mlx5_core", "igb"]}, ["0000:5e:02.0", "0000:01:00.0"]),
    ({"pciAddresses": ["0000:3b:02.3"]}, ["0000:3b:02.3"]),
    ({"acpiIndexes": ["7"]}, ["0000:5e:02.0"]),
    ({"pfNames": ["ens1f0#0,2-3,7"]}, ["0000:3b:02.0", "0000:3b:02.2", "0000:3b:02.3", "0000:3b:02.7"]),
    ({"pfNames": ["ens2f0"]}, ["0000:5e:02.0"]),  # names compare case-insensitively
    ({"pfNames": ["eno1"]}, []),  # a function that is not a VF has no PF name
    ({"rootDevices": ["0000:3b:00.0#6-7"]}, ["0000:3b:02.6", "0000:3b:02.7"]),
    ({"linkTypes": ["infiniband"]}, ["0000:5e:02.0"]),
    ({"ddpProfiles": ["ICE COMMS Package"]}, ["0000:5e:02.0"]),
    ({"pKeys": ["0x7FFF"]}, ["0000:5e:02.0"]),
    ({"isRdma": True}, ["0000:5e:02.0"]),
    ({"vdpaType": "vhost"}, ["0000:5e:02.0"]),
    ({"vendors": ["8086"], "pfNames": ["ens1f0#1"]}, ["0000:3b:02.1"]),
    ({"needVhostNet": True, "devices": ["1533"]}, ["0000:01:00.0"]),  # needVhostNet does not filter
])
def test_each_selector_filters(selector: dict[str, object], expected: list[str]) -> None:
    assert selected(selector) == expected


def test_first_claim_wins_across_resources_and_selectors() -> None:
    text = json.dumps({"resourceList": [
        {"resourceName": "low", "selectors": [{"pfNames": ["ens1f0#0-3"]}, {"pfNames": ["ens1f0#2-5"]}]},
        {"resourceName": "all", "selectors": [{"vendors": ["8086"]}]},
        {"resourceName": "none", "selectors": [{"pfNames": ["ens1f0"]}]},
    ]})
    low, everything, none = build_pools(parse_config(text, "p"), DEVICES)
    assert list(low.devices) == [f"0000:3b:02.{i}" for i in range(6)]
    assert low.claimed_by["0000:3b:02.4"].pf_names[0].indexes == frozenset({2, 3, 4, 5})
    assert list(everything.devices) == ["0000:3b:02.6", "0000:3b:02.7", "0000:01:00.0"]
    assert none.devices == {}
