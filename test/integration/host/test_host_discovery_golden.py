"""Discovery on simulated hosts of each model matches golden NodeState `status.interfaces`.

Golden files are regenerated with SRIOVOP_UPDATE_GOLDEN=1 (then reviewed in the diff); otherwise any
difference fails. MAC addresses are normalised.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sriovop.host import Host
from sriovop.host.nics import SupportedNics
from test.support.host_sim import applier, normalise, sim_host

GOLDEN = Path(__file__).parent / "golden"
MODELS = ["xxv710", "e810", "cx6dx", "82576"]


def check_golden(name: str, interfaces: list[dict]) -> None:
    path = GOLDEN / f"{name}.json"
    got = normalise(interfaces)
    if os.environ.get("SRIOVOP_UPDATE_GOLDEN"):
        path.write_text(json.dumps(got, indent=1) + "\n")
    assert path.exists(), f"golden file {path} missing (run with SRIOVOP_UPDATE_GOLDEN=1 and review it)"
    assert got == json.loads(path.read_text())


def spec_for(status: dict, num_vfs: int) -> dict:
    half = num_vfs // 2
    return {
        "pciAddress": status["pciAddress"], "name": status["name"], "numVfs": num_vfs, "mtu": 9000,
        "vfGroups": [
            {"resourceName": "net", "deviceType": "netdevice", "vfRange": f"0-{half - 1}", "mtu": 9000,
             "policyName": "p1"},
            {"resourceName": "dpdk", "deviceType": "vfio-pci", "vfRange": f"{half}-{num_vfs - 1}",
             "policyName": "p2"},
        ],
    }


@pytest.mark.parametrize("model", MODELS)
def test_discovery_matches_golden_before_and_after_apply(tmp_path: Path, model: str) -> None:
    with sim_host(tmp_path, [model]) as (_sim, host):
        fresh = host.discover()
        check_golden(f"{model}-fresh", fresh)
        assert all("Vfs" not in i for i in fresh)
        spec = spec_for(fresh[0], 4)
        applier(host).apply([spec], fresh)
        configured = host.discover()
        check_golden(f"{model}-4vfs", configured)
        assert configured[0]["numVfs"] == 4
        assert [vf["driver"] for vf in configured[0]["Vfs"]][2:] == ["vfio-pci", "vfio-pci"]


def test_status_shape_uses_upstream_json_names(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (_sim, host):
        pf = host.discover()[0]
        applier(host).apply([spec_for(pf, 2)])
        pf = host.discover()[0]
    assert {"totalvfs", "Vfs", "eSwitchMode", "linkAdminState", "linkSpeed", "altNames"} <= set(pf)
    assert pf["linkSpeed"] == "25000 Mb/s" and pf["linkType"] == "ETH" and pf["eSwitchMode"] == "legacy"
    assert pf["altNames"] == ["enp24s0f0"]
    vf = pf["Vfs"][0]
    assert set(vf) == {"name", "mac", "driver", "pciAddress", "vendor", "deviceID", "mtu", "vfID"}
    assert vf["vfID"] == 0 and vf["deviceID"] == "154c" and vf["vendor"] == "8086"


def test_unsupported_models_are_skipped_unless_dev_mode(tmp_path: Path) -> None:
    only_intel = SupportedNics.from_configmap_data({"xxv710": "8086 158b 154c"})
    with sim_host(tmp_path, ["xxv710:1", "cx6dx:1"]) as (sim, _host):
        strict = Host(sim.root, kernel=sim.access, supported=only_intel)
        dev = Host(sim.root, kernel=sim.access, supported=only_intel, dev_mode=True)
        try:
            assert [i["deviceID"] for i in strict.discover()] == ["158b"]
            assert [i["deviceID"] for i in dev.discover()] == ["158b", "101d"]
        finally:
            strict.close()
            dev.close()


def test_several_netdevs_per_device_pick_the_physical_port(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["cx6dx:1"]) as (sim, host):
        pf = sim.pf(0)
        # A representor-like netdev that sorts before the port netdev must not be picked.
        sim.add_extra_netdev(pf.pci, "aaa_rep0", "pf0vf0")
        iface = host.discover()[0]
    assert iface["name"] == pf.ifname
    assert iface["mtu"] == 1500  # came from netlink: the extra netdev exists only in sysfs


def test_vf_without_driver_is_reported_without_driver_after_retries(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["82576:1"]) as (sim, host):
        pf = sim.pf(0)
        sim.fault(pf.pci, refuse_bind=["igbvf"])
        host.discovery_options.driver_retries = 2
        host.discovery_options.driver_retry_interval = 0.01
        host.io.write(host.paths.device(pf.pci) / "sriov_numvfs", "2")
        iface = host.discover()[0]
    assert iface["numVfs"] == 2
    assert [("driver" in vf, "name" in vf) for vf in iface["Vfs"]] == [(False, False), (False, False)]
