"""The device-plugin ConfigMap data for merged policies, byte for byte (golden), and its quirks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1.supportednics import default_supported_nics
from sriovop.controllers.node_policy_apply import sort_policies
from sriovop.render.device_plugin_config import DevicePluginConfigError, node_config_json

GOLDEN = Path(__file__).parent / "golden" / "device_plugin"
NICS = default_supported_nics()
NODE = {"metadata": {"name": "worker-0", "labels": {"sriov": "yes", "kubernetes.io/os": "linux"}}}


def policy(name: str, priority: int = 99, node_selector: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "sriov-network-operator"},
            "spec": {"priority": priority, "nodeSelector": node_selector or {"sriov": "yes"},
                     "deviceType": "netdevice", **spec}}


STATE = {
    "metadata": {"name": "worker-0"},
    "status": {"interfaces": [
        {"name": "ens1f0", "altNames": ["enp59s0f0"], "pciAddress": "0000:3b:00.0", "vendor": "8086",
         "deviceID": "158b", "netFilter": "openstack/NetworkID:aaa"},
        {"name": "ens1f1", "pciAddress": "0000:3b:00.1", "vendor": "8086", "deviceID": "158b",
         "netFilter": "openstack/NetworkID:bbb"},
    ]},
}

CASES: dict[str, list[dict[str, Any]]] = {
    "no-policies": [],
    "not-selected": [policy("p", node_selector={"sriov": "no"}, resourceName="r", numVfs=4,
                            nicSelector={"vendor": "8086"})],
    "single-vf-device": [policy("p", resourceName="intelnics", numVfs=4,
                                nicSelector={"vendor": "8086", "deviceID": "158b"})],
    "numvfs-zero-keeps-pf-id": [policy("p", resourceName="pfs", numVfs=0,
                                       nicSelector={"vendor": "8086", "deviceID": "158b"})],
    "unknown-pf-id-omitted": [policy("p", resourceName="x", numVfs=2, nicSelector={"deviceID": "ffff"})],
    "rdma-vhost-vdpa-exclude": [policy("p", resourceName="mlx", numVfs=8, isRdma=True, needVhostNet=True,
                                       vdpaType="virtio", excludeTopology=True, linkType="eth",
                                       nicSelector={"vendor": "15b3", "deviceID": "101d"})],
    "vfio-no-linktype-no-driver": [policy("p", resourceName="dpdk", numVfs=4, deviceType="vfio-pci",
                                          linkType="ib", nicSelector={"rootDevices": ["0000:3b:00.1"]})],
    # One resource for DPDK on Intel (vfio-pci) and Mellanox (mlx5_core, isRdma) nodes: no drivers
    # selector, so the Mellanox VFs are not filtered out (upstream's reason for dropping it).
    "vfio-mixed-vendor-merge": [
        policy("intel", priority=10, resourceName="dpdk", numVfs=4, deviceType="vfio-pci",
               nicSelector={"vendor": "8086", "deviceID": "158b"}),
        policy("mlx", priority=20, resourceName="dpdk", numVfs=4, isRdma=True,
               nicSelector={"vendor": "15b3", "deviceID": "101d"}),
    ],
    # Upstream's own examples (TestRenderDevicePluginConfigData): vdpa virtio, vdpa vhost, excludeTopology.
    "upstream-vdpa-virtio": [policy("p", resourceName="resourceName", vdpaType="virtio")],
    "upstream-vdpa-vhost": [policy("p", resourceName="resourceName", vdpaType="vhost")],
    "upstream-exclude-topology": [policy("p", resourceName="resourceName", excludeTopology=True)],
    "ib-linktype": [policy("p", resourceName="ib", numVfs=4, linkType="IB", nicSelector={"vendor": "15b3"})],
    "pfnames-altname-resolved": [policy("p", resourceName="part", numVfs=8,
                                        nicSelector={"pfNames": ["enp59s0f0#0-3", "ens1f1"]})],
    "netfilter": [policy("p", resourceName="osnet", numVfs=2, nicSelector={"netFilter": "openstack/NetworkID:bbb"})],
    "merged-same-resource": [
        policy("a", priority=10, resourceName="shared", numVfs=8, linkType="eth", excludeTopology=True,
               nicSelector={"vendor": "8086", "deviceID": "158b", "pfNames": ["ens1f0#0-3"]}),
        policy("b", priority=20, resourceName="shared", numVfs=8, isRdma=True, linkType="eth",
               nicSelector={"vendor": "8086", "deviceID": "1592", "pfNames": ["ens1f0#4-7"],
                            "rootDevices": ["0000:3b:00.0"]}),
        policy("c", priority=30, resourceName="other", numVfs=2, nicSelector={"vendor": "15b3"}),
    ],
    "html-escaped": [policy("p", resourceName="a<b>&c", numVfs=1, nicSelector={"vendor": "8086"})],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_device_plugin_config_matches_golden(case: str) -> None:
    text, enabled = node_config_json(sort_policies(CASES[case]), NODE, STATE, NICS)
    path = GOLDEN / f"{case}.json"
    if os.environ.get("SRIOVOP_UPDATE_GOLDEN"):
        path.write_text(text + "\n")
    assert text + "\n" == path.read_text()
    decoded = json.loads(text)
    assert enabled == bool(decoded["resourceList"])


def test_empty_list_is_null_and_disabled() -> None:
    assert node_config_json([], NODE, STATE, NICS) == ('{"resourceList":null}', False)


def test_entry_shape_and_capitalised_keys() -> None:
    text, enabled = node_config_json(sort_policies(CASES["single-vf-device"]), NODE, STATE, NICS)
    assert enabled
    assert text == ('{"resourceList":[{"resourceName":"intelnics","selectors":{"vendors":["8086"],'
                    '"devices":["154c"],"IsRdma":false,"NeedVhostNet":false},"SelectorObj":null}]}')


def test_merge_order_and_last_exclude_topology() -> None:
    # Sorted: c (30), b (20), a (10). "shared" is created by b and merged with a.
    text, _ = node_config_json(sort_policies(CASES["merged-same-resource"]), NODE, STATE, NICS)
    entries = json.loads(text)["resourceList"]
    assert [e["resourceName"] for e in entries] == ["other", "shared"]
    shared = entries[1]
    assert shared["excludeTopology"] is True  # from a, applied last
    assert shared["selectors"]["IsRdma"] is True  # from b, which created the entry
    assert shared["selectors"]["devices"] == ["1889", "154c"]
    assert shared["selectors"]["pfNames"] == ["ens1f0#4-7", "ens1f0#0-3"]


def test_vfio_pci_gets_no_drivers_selector() -> None:
    text, _ = node_config_json(sort_policies(CASES["vfio-mixed-vendor-merge"]), NODE, STATE, NICS)
    (entry,) = json.loads(text)["resourceList"]
    assert "drivers" not in entry["selectors"]
    assert entry["selectors"]["vendors"] == ["15b3", "8086"]  # priority 20 sorts first, as upstream


def test_netfilter_without_reported_interfaces_is_an_error() -> None:
    with pytest.raises(DevicePluginConfigError, match="worker-0 doesn't contain interfaces"):
        node_config_json(CASES["netfilter"], NODE, {"metadata": {"name": "worker-0"}}, NICS)
