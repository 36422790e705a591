"""The device plugin's config parser (host: none): the operator's own rendered ConfigMap data, upstream's
README examples, and clear errors naming the field for what cannot be used."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sriovop.api.v1.supportednics import default_supported_nics
from sriovop.deviceplugin.config import ConfigError, parse_config
from sriovop.deviceplugin.indexranges import IndexedName
from sriovop.deviceplugin.selectors import Selector
from sriovop.render.device_plugin_config import node_config_json

NODE = {"metadata": {"name": "worker-0", "labels": {"kubernetes.io/os": "linux"}}}
STATE = {"metadata": {"name": "worker-0"}, "status": {"interfaces": [
    {"name": "ens1f0", "altNames": ["enp59s0f0"], "pciAddress": "0000:3b:00.0", "vendor": "8086", "deviceID": "158b"}]}}


def policy(name: str, priority: int, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "sriov-network-operator"},
            "spec": {"priority": priority, "nodeSelector": {"kubernetes.io/os": "linux"}, "deviceType": "netdevice",
                     **spec}}


def test_the_operators_rendered_config() -> None:
    """What our operator writes for a node (IsRdma/NeedVhostNet capitalised, SelectorObj: null, altnames
    resolved, merged policies) reads back into the resources and selectors the policies meant."""
    policies = [
        policy("a", 10, resourceName="intelnics", numVfs=8, linkType="eth", excludeTopology=True,
               nicSelector={"vendor": "8086", "deviceID": "158b", "pfNames": ["enp59s0f0#0-3"]}),
        policy("b", 20, resourceName="mlxrdma", numVfs=4, isRdma=True, needVhostNet=True,
               nicSelector={"vendor": "15b3", "deviceID": "101d", "rootDevices": ["0000:5e:00.0"]}),
        policy("c", 30, resourceName="dpdk", numVfs=4, deviceType="vfio-pci", vdpaType="vhost",
               nicSelector={"vendor": "8086"}),
    ]
    text, enabled = node_config_json(policies, NODE, STATE, default_supported_nics())
    assert enabled and '"IsRdma":true' in text and '"SelectorObj":null' in text
    resources = parse_config(text, "openshift.io")
    assert [(r.full_name, r.exclude_topology) for r in resources] == [
        ("openshift.io/intelnics", True), ("openshift.io/mlxrdma", False), ("openshift.io/dpdk", False)]
    assert resources[0].selectors == (Selector(vendors=("8086",), devices=("154c",),
                                               pf_names=(IndexedName("ens1f0", frozenset({0, 1, 2, 3})),),
                                               link_types=("ether",)),)
    assert resources[1].selectors == (Selector(vendors=("15b3",), devices=("101e",),
                                               root_devices=(IndexedName("0000:5e:00.0"),),
                                               is_rdma=True, need_vhost_net=True),)
    assert resources[2].selectors[0].vdpa_type == "vhost"


def test_a_node_with_no_resources() -> None:
    text, enabled = node_config_json([], NODE, STATE, default_supported_nics())
    assert (text, enabled) == ('{"resourceList":null}', False)
    assert parse_config(text, "intel.com") == []


# Upstream's README "Config parameters" example, without its accelerator and auxNetDevice entries (refused
# below) and without its trailing comma (not JSON).
INTEL_VF_DRIVERS = ["i40evf", "ixgbevf", "iavf"]
README_EXAMPLE = {"resourceList": [
    {"resourceName": "intel_sriov_netdevice",
     "selectors": [{"vendors": ["8086"], "devices": ["154c", "10ed", "1889"], "drivers": INTEL_VF_DRIVERS}]},
    {"resourceName": "intel_sriov_dpdk", "resourcePrefix": "intel.com",
     "selectors": [{"vendors": ["8086"], "devices": ["154c", "10ed", "1889"], "drivers": ["vfio-pci"],
                    "pfNames": ["enp0s0f0", "enp2s2f1"], "needVhostNet": True}]},
    {"resourceName": "mlnx_sriov_rdma", "resourcePrefix": "mellanox.com",
     "selectors": [{"vendors": ["15b3"], "devices": ["1018"], "drivers": ["mlx5_ib"], "isRdma": True}]},
    {"resourceName": "infiniband_rdma_netdevs", "selectors": [{"linkTypes": ["infiniband"], "isRdma": True}]},
    {"resourceName": "ct6dx_vdpa_vhost",
     "selectors": [{"vendors": ["15b3"], "devices": ["101e"], "drivers": ["mlx5_core"], "vdpaType": "vhost"}]},
    {"resourceName": "intel_sriov_netdevice_additional_env",
     "selectors": [{"vendors": ["8086"], "devices": ["154c", "10ed", "1889"], "drivers": INTEL_VF_DRIVERS}],
     "additionalInfo": {"*": {"token": "3e49019f-412f-4f02-824e-4cd195944205"}}},
    {"resourceName": "brcm_sriov_bnxt", "resourcePrefix": "broadcom.com",
     "selectors": [{"vendors": ["14e4"], "devices": ["1750"], "drivers": ["bnxt_en"]}]},
    {"resourceName": "old_selectors_syntax_example",
     "selectors": {"vendors": ["8086"], "devices": ["154c", "10ed", "1889"], "drivers": INTEL_VF_DRIVERS}},
]}


def test_upstream_readme_example() -> None:
    resources = parse_config(json.dumps(README_EXAMPLE), "intel.com")
    assert [r.full_name for r in resources] == [
        "intel.com/intel_sriov_netdevice", "intel.com/intel_sriov_dpdk", "mellanox.com/mlnx_sriov_rdma",
        "intel.com/infiniband_rdma_netdevs", "intel.com/ct6dx_vdpa_vhost",
        "intel.com/intel_sriov_netdevice_additional_env", "broadcom.com/brcm_sriov_bnxt",
        "intel.com/old_selectors_syntax_example"]
    assert resources[1].selectors[0].need_vhost_net and resources[1].selectors[0].pf_names[1] == IndexedName("enp2s2f1")
    assert resources[5].additional_info == {"*": {"token": "3e49019f-412f-4f02-824e-4cd195944205"}}
    # the object form and the list form mean the same
    assert resources[7].selectors == resources[0].selectors


def test_every_selector_field() -> None:
    text = json.dumps({"resourceList": [{"resourceName": "all", "selectors": [{
        "vendors": ["8086"], "devices": ["154c"], "drivers": ["iavf"], "pciAddresses": ["0000:3b:02.0"],
        "acpiIndexes": ["101"], "pfNames": ["ens1f0#0,2-7"], "rootDevices": ["0000:3b:00.0#1"],
        "linkTypes": ["ether"], "ddpProfiles": ["GTPv1-C/U IPv4/IPv6 payload"], "pKeys": ["0x7fff"],
        "isRdma": False, "needVhostNet": True}]}]})
    [resource] = parse_config(text, "intel.com")
    assert resource.selectors == (Selector(
        vendors=("8086",), devices=("154c",), drivers=("iavf",), pci_addresses=("0000:3b:02.0",),
        acpi_indexes=("101",), pf_names=(IndexedName("ens1f0", frozenset({0, 2, 3, 4, 5, 6, 7})),),
        root_devices=(IndexedName("0000:3b:00.0", frozenset({1})),), link_types=("ether",),
        ddp_profiles=("GTPv1-C/U IPv4/IPv6 payload",), pkeys=("0x7fff",), need_vhost_net=True),)


def _entry(**fields: Any) -> str:
    return json.dumps({"resourceList": [{"resourceName": "r", "selectors": [{"vendors": ["8086"]}], **fields}]})


@pytest.mark.parametrize(("text", "message"), [
    (json.dumps({"resourceList": [{"resourceName": "a"}, {"resourceName": "b"}, {"resourceName": "a"}]}),
     "resourceList[2].resourceName: duplicate resource intel.com/a (also resourceList[0])"),
    (_entry(deviceType="accelerator"),
     "resourceList[0].deviceType: 'accelerator' is not supported by sriovop device-plugin"),
    (_entry(deviceType="auxNetDevice"),
     "resourceList[0].deviceType: 'auxNetDevice' is not supported by sriovop device-plugin"),
    (_entry(deviceType="gpu"), 'resourceList[0].deviceType: unknown device type "gpu"'),
    (_entry(resourceName="intel/nics"), "resourceList[0].resourceName: must match ^[a-zA-Z0-9_-]+$"),
    (_entry(selectors={"pfNames": ["ens1f0#2-1"]}), "resourceList[0].selectors.pfNames[0]: 'ens1f0#2-1': range"),
    (_entry(selectors=[{}, {"rootDevices": ["0000:3b:00.0#x"]}]),
     "resourceList[0].selectors[1].rootDevices[0]: '0000:3b:00.0#x': 'x' is not an index"),
    (_entry(selectors=[{"vendor": ["8086"]}]), "resourceList[0].selectors[0].vendor: unknown netDevice selector"),
    (_entry(selectors=[{"vendors": "8086"}]), "resourceList[0].selectors[0].vendors: must be a list of strings"),
    (_entry(selectors=[{"isRdma": "yes"}]), "resourceList[0].selectors[0].isRdma: must be true or false"),
    (_entry(selectors=[{"vdpaType": "vdpa"}]), "resourceList[0].selectors[0].vdpaType: must be one of virtio, vhost"),
    (_entry(selectors=[{"vdpaType": "virtio", "isRdma": True}]),
     "resourceList[0].selectors[0].vdpaType: cannot be combined with isRdma"),
    ('{"resourceList": {}}', "resourceList: must be a list"),
    ("{", "not JSON"),
])
def test_errors_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "intel.com")
    assert message in str(info.value)


def test_the_same_name_under_two_prefixes_is_two_resources() -> None:
    text = json.dumps({"resourceList": [{"resourceName": "a"}, {"resourceName": "a", "resourcePrefix": "x.io"}]})
    assert [r.full_name for r in parse_config(text, "intel.com")] == ["intel.com/a", "x.io/a"]
