"""The `sriov` CNI plugin (ADD / DEL / CHECK / VERSION) on the simulated host.

Host: the simulated SR-IOV host (sriovop.sim). The PF side of each VF (IFLA_VF_* attributes) is
answered by the simulator; each VF netdev is a real link in the simulator's network namespace, so the
move into a real pod namespace, the rename, MAC, MTU, up and the IPAM addresses are real netlink. IPAM
is the real host-local plugin.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from pyroute2 import IPRoute

from sriovop.sim.vf_netdevs import kill_netns
from test.support.cni_sim import CniSim, cni_path, cni_sim

DEFAULT_VF = {"vlan": 0, "vlan_qos": 0, "vlan_proto": "802.1q", "spoofchk": True, "trust": False,
              "link_state": "auto", "min_tx_rate": 0, "max_tx_rate": 0, "admin_mac": "00:00:00:00:00:00"}


def netconf(pci: str, tmp_path: Path, version: str = "1.0.0", **fields: Any) -> dict[str, Any]:
    conf: dict[str, Any] = {"cniVersion": version, "name": "sriov-net", "type": "sriov", "deviceID": pci,
                            "ipam": {"type": "host-local", "subnet": "10.56.217.0/24",
                                     "dataDir": str(tmp_path / "ipam")}}
    conf.update(fields)
    return {k: v for k, v in conf.items() if v is not None}


@pytest.fixture
def xxv(tmp_path: Path) -> Any:
    assert cni_path(), "host-local IPAM plugin is missing (hack/install-deps.sh installs containernetworking-plugins)"
    with cni_sim(tmp_path, ["xxv710:1"], vfs=4) as env:
        yield env


def first_vf(env: CniSim) -> tuple[str, str]:
    return sorted(env.vfs.items())[0]


def test_add_applies_every_field_and_del_restores_everything(xxv: CniSim, tmp_path: Path) -> None:
    pci, host_name = first_vf(xxv)
    pf = xxv.sim.pf(0).pci
    before = xxv.host_links()[host_name]
    pod = xxv.new_netns()
    conf = netconf(pci, tmp_path, vlan=100, vlanQoS=5, vlanProto="802.1ad", spoofchk="off", trust="on",
                   link_state="enable", min_tx_rate=100, max_tx_rate=1000, mac="02:00:00:00:00:01",
                   runtimeConfig={"mac": "02:11:22:33:44:55"})
    add = xxv.call("ADD", conf, pod, args="IgnoreUnknown=true;MAC=02:00:00:00:00:02")
    assert add.exit_code == 0, add.stdout
    result = json.loads(add.stdout)
    assert result["interfaces"] == [{"name": "net1", "mac": "02:11:22:33:44:55",
                                     "sandbox": f"/var/run/netns/{pod}", "pciID": pci}]
    assert result["ips"][0]["address"] == "10.56.217.2/24" and result["ips"][0]["interface"] == 0
    links = xxv.pod_links(pod)
    assert links["net1"]["mac"] == "02:11:22:33:44:55" and links["net1"]["up"]
    assert "10.56.217.2/24" in links["net1"]["addrs"]
    assert (tmp_path / "ipam" / "sriov-net" / "10.56.217.2").is_file()
    assert host_name not in xxv.host_links()
    assert xxv.vf_config(pf, 0) == {"vlan": 100, "vlan_qos": 5, "vlan_proto": "802.1ad", "spoofchk": False,
                                    "trust": True, "link_state": "enable", "min_tx_rate": 100, "max_tx_rate": 1000,
                                    "admin_mac": "02:11:22:33:44:55"}
    cache = xxv.state_dir / "sriov" / "c1-net1"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    cached = json.loads(cache.read_text())
    # Upstream's field names and types, so upstream's DEL can read it.
    assert cached["OrigVfState"] == {"HostIFName": host_name, "SpoofChk": True, "Trust": False,
                                     "AdminMAC": "00:00:00:00:00:00", "EffectiveMAC": before["mac"], "Vlan": 0,
                                     "VlanQoS": 0, "VlanProto": 0x8100, "MinTxRate": 0, "MaxTxRate": 0,
                                     "LinkState": 0, "MTU": before["mtu"]}
    assert (cached["Master"], cached["VFID"], cached["MAC"], cached["deviceID"]) == \
        ("ens1f0", 0, "02:11:22:33:44:55", pci)
    assert (xxv.state_dir / "sriov" / "pci" / pci).read_text() == f"/var/run/netns/{pod}"

    assert xxv.call("CHECK", conf, pod).exit_code == 0
    dele = xxv.call("DEL", conf, pod)
    assert dele.exit_code == 0, dele.stdout
    after = xxv.host_links()[host_name]
    assert (after["mac"], after["mtu"], after["alias"]) == (before["mac"], before["mtu"], pci)
    assert "net1" not in xxv.pod_links(pod)
    assert xxv.vf_config(pf, 0) == DEFAULT_VF
    assert xxv.leftovers() == []
    # The address went back to host-local (its reservation file is gone).
    assert not (tmp_path / "ipam" / "sriov-net" / "10.56.217.2").exists()


@pytest.mark.parametrize("version", ["0.3.0", "0.3.1", "0.4.0"])
def test_older_result_versions_for_multus(xxv: CniSim, tmp_path: Path, version: str) -> None:
    pci, _ = first_vf(xxv)
    pod = xxv.new_netns()
    add = xxv.call("ADD", netconf(pci, tmp_path, version=version), pod)
    result = json.loads(add.stdout)
    assert result["cniVersion"] == version
    assert result["ips"][0]["version"] == "4" and result["ips"][0]["interface"] == 0
    assert "pciID" not in result["interfaces"][0]
    assert xxv.call("DEL", netconf(pci, tmp_path, version=version), pod).exit_code == 0


def test_version() -> None:
    from sriovop.cni.plugin import version_response

    assert json.loads(version_response().stdout)["supportedVersions"] == ["0.3.0", "0.3.1", "0.4.0", "1.0.0"]


def test_a_vf_held_by_a_live_pod_is_refused_and_a_stale_allocation_is_cleared(xxv: CniSim, tmp_path: Path) -> None:
    pci, _ = first_vf(xxv)
    pod_a, pod_b = xxv.new_netns(), xxv.new_netns()
    conf = netconf(pci, tmp_path)
    assert xxv.call("ADD", conf, pod_a, container_id="a").exit_code == 0
    refused = xxv.call("ADD", conf, pod_b, container_id="b")
    err = json.loads(refused.stdout)
    assert refused.exit_code == 1 and err["msg"] == "VF already allocated" and pod_a in err["details"]
    assert "net1" not in xxv.pod_links(pod_b)
    # Pod A dies without a DEL: its VF comes back to the host and its allocation file is stale.
    kill_netns(xxv.root, pod_a)
    xxv.namespaces.remove(pod_a)
    # Its VF is back in the host under the pod's name; our ADD cannot use that netdev name
    # until DEL a restores it, so give the old pod its DEL first, as the kubelet eventually does.
    assert xxv.call("DEL", conf, pod_a, container_id="a").exit_code == 0
    assert xxv.call("ADD", conf, pod_b, container_id="b").exit_code == 0
    assert (xxv.state_dir / "sriov" / "pci" / pci).read_text() == f"/var/run/netns/{pod_b}"


def test_stale_allocation_file_alone_is_removed_at_add(xxv: CniSim, tmp_path: Path) -> None:
    pci, _ = first_vf(xxv)
    alloc = xxv.state_dir / "sriov" / "pci" / pci
    alloc.parent.mkdir(parents=True)
    alloc.write_text("/var/run/netns/gone-long-ago")
    pod = xxv.new_netns()
    assert xxv.call("ADD", netconf(pci, tmp_path), pod).exit_code == 0
    assert alloc.read_text() == f"/var/run/netns/{pod}"


def _assert_untouched(env: CniSim, pci: str, host_name: str, before: dict[str, Any], pod: str) -> None:
    assert env.host_links()[host_name]["mac"] == before["mac"]
    assert env.vf_config(env.sim.pf(0).pci, int(pci[-1])) == DEFAULT_VF
    assert env.leftovers() == []
    assert all(link.get("alias") != pci for link in env.pod_links(pod).values())


def test_ifname_taken_in_the_pod_rolls_everything_back(xxv: CniSim, tmp_path: Path) -> None:
    pci, host_name = first_vf(xxv)
    before = xxv.host_links()[host_name]
    pod = xxv.new_netns()
    with IPRoute(netns=pod) as ipr:
        ipr.link("add", ifname="net1", kind="veth", peer={"ifname": "other"})
    add = xxv.call("ADD", netconf(pci, tmp_path, vlan=10, mac="02:00:00:00:00:07", trust="on"), pod)
    err = json.loads(add.stdout)
    assert add.exit_code == 1 and "net1 already exists" in err["details"]
    _assert_untouched(xxv, pci, host_name, before, pod)


def test_ipam_failure_rolls_everything_back(xxv: CniSim, tmp_path: Path) -> None:
    pci, host_name = first_vf(xxv)
    before = xxv.host_links()[host_name]
    pod = xxv.new_netns()
    conf = netconf(pci, tmp_path, vlan=10, mac="02:00:00:00:00:07")
    conf["ipam"] = {"type": "host-local", "subnet": "not-a-subnet"}
    add = xxv.call("ADD", conf, pod)
    assert add.exit_code == 1 and "IPAM host-local ADD" in json.loads(add.stdout)["msg"]
    _assert_untouched(xxv, pci, host_name, before, pod)
    missing = netconf(pci, tmp_path)
    missing["ipam"] = {"type": "no-such-ipam"}
    err = json.loads(xxv.call("ADD", missing, pod).stdout)
    assert err["msg"] == "IPAM plugin not found" and err["details"].startswith("ipam.type")
    _assert_untouched(xxv, pci, host_name, before, pod)


def test_attribute_the_driver_refuses_rolls_back_what_was_applied(tmp_path: Path) -> None:
    """igb has no VF link-state control: vlan, MAC and trust were already set when link_state fails."""
    with cni_sim(tmp_path, ["82576:1"], vfs=2) as env:
        pci, host_name = first_vf(env)
        before = env.host_links()[host_name]
        pod = env.new_netns()
        add = env.call("ADD", netconf(pci, tmp_path, vlan=42, mac="02:00:00:00:00:08", trust="on",
                                      link_state="enable"), pod)
        err = json.loads(add.stdout)
        assert add.exit_code == 1 and err["details"].startswith(f"deviceID {pci}: link_state")
        _assert_untouched(env, pci, host_name, before, pod)
        min_rate = json.loads(env.call("ADD", netconf(pci, tmp_path, min_tx_rate=10, max_tx_rate=100), pod).stdout)
        assert "max_tx_rate" in min_rate["details"]
        _assert_untouched(env, pci, host_name, before, pod)


def test_missing_or_bad_inputs_fail_before_touching_anything(xxv: CniSim, tmp_path: Path) -> None:
    pci, host_name = first_vf(xxv)
    before = xxv.host_links()[host_name]
    pod = xxv.new_netns()
    no_dev = json.loads(xxv.call("ADD", netconf(None, tmp_path), pod).stdout)  # type: ignore[arg-type]
    assert "VF pci addr is required" in no_dev["details"]
    unknown = json.loads(xxv.call("ADD", netconf("0000:99:00.0", tmp_path), pod).stdout)
    assert unknown["msg"] == "VF not found"
    pf = json.loads(xxv.call("ADD", netconf(xxv.sim.pf(0).pci, tmp_path), pod).stdout)
    assert pf["msg"] == "not a VF"
    no_ns = xxv.call("ADD", netconf(pci, tmp_path), pod, open_netns=False)
    assert "CNI_NETNS" in json.loads(no_ns.stdout)["details"]
    _assert_untouched(xxv, pci, host_name, before, pod)


def test_del_is_idempotent_and_succeeds_without_cache(xxv: CniSim, tmp_path: Path) -> None:
    pci, host_name = first_vf(xxv)
    pod = xxv.new_netns()
    conf = netconf(pci, tmp_path, vlan=7)
    assert xxv.call("ADD", conf, pod).exit_code == 0
    assert xxv.call("DEL", conf, pod).exit_code == 0
    assert xxv.call("DEL", conf, pod).exit_code == 0
    # After a reboot: no cache, no netns.
    assert xxv.call("DEL", conf, None, container_id="never-added").exit_code == 0
    assert host_name in xxv.host_links() and xxv.leftovers() == []


def test_del_after_the_netns_is_gone_restores_name_and_mac_in_the_host(xxv: CniSim, tmp_path: Path) -> None:
    pci, host_name = first_vf(xxv)
    before = xxv.host_links()[host_name]
    pod = xxv.new_netns()
    conf = netconf(pci, tmp_path, vlan=9, mac="02:00:00:00:00:09")
    assert xxv.call("ADD", conf, pod).exit_code == 0
    assert kill_netns(xxv.root, pod) == ["net1"]
    xxv.namespaces.remove(pod)
    assert "net1" in xxv.host_links()
    dele = xxv.call("DEL", conf, pod)
    assert dele.exit_code == 0, dele.stdout
    links = xxv.host_links()
    assert "net1" not in links and links[host_name]["mac"] == before["mac"]
    assert xxv.vf_config(xxv.sim.pf(0).pci, 0) == DEFAULT_VF
    assert xxv.leftovers() == []


def test_upstream_cache_is_understood_by_our_del(xxv: CniSim, tmp_path: Path) -> None:
    """A cache as upstream sriov-cni's Go marshals it (no DPDKMode, MTU pointer null, etc.)."""
    pci, host_name = first_vf(xxv)
    before = xxv.host_links()[host_name]
    pod = xxv.new_netns()
    conf = netconf(pci, tmp_path, vlan=300, spoofchk="off")
    assert xxv.call("ADD", conf, pod).exit_code == 0
    path = xxv.state_dir / "sriov" / "c1-net1"
    ours = json.loads(path.read_text())
    upstream = {k: v for k, v in ours.items() if k != "DPDKMode"}
    upstream["OrigVfState"]["VlanProto"] = 33024
    path.write_text(json.dumps(upstream))
    assert xxv.call("DEL", conf, pod).exit_code == 0
    assert xxv.host_links()[host_name]["mac"] == before["mac"]
    assert xxv.vf_config(xxv.sim.pf(0).pci, 0) == DEFAULT_VF


def test_check_detects_a_changed_mac(xxv: CniSim, tmp_path: Path) -> None:
    pci, _ = first_vf(xxv)
    pod = xxv.new_netns()
    conf = netconf(pci, tmp_path, vlan=5, mac="02:00:00:00:00:05")
    assert xxv.call("ADD", conf, pod).exit_code == 0
    with IPRoute(netns=pod) as ipr:
        ipr.link("set", index=ipr.link_lookup(ifname="net1")[0], address="02:00:00:00:00:99")
    check = xxv.call("CHECK", conf, pod)
    assert check.exit_code == 1 and json.loads(check.stdout)["details"].startswith("mac:")


def test_vfio_pci_vf_gets_attributes_only_and_del_knows_it(tmp_path: Path) -> None:
    with cni_sim(tmp_path, ["xxv710:1"], vfs=2, modules=["vfio_pci"]) as env:
        pci, _ = first_vf(env)
        for rel, data in ((f"sys/bus/pci/devices/{pci}/driver_override", "vfio-pci"),
                          ("sys/bus/pci/drivers/iavf/unbind", pci), ("sys/bus/pci/drivers_probe", pci)):
            env.sim.kernel.write(rel, data)
        env.drop_netdev(pci)
        pod = env.new_netns()
        conf = netconf(pci, tmp_path, vlan=11, mac="02:00:00:00:00:11")
        add = env.call("ADD", conf, pod)
        assert add.exit_code == 0, add.stdout
        assert json.loads(add.stdout)["interfaces"][0]["mac"] == "02:00:00:00:00:11"
        assert list(env.pod_links(pod)) == ["lo"]
        assert env.vf_config(env.sim.pf(0).pci, 0)["vlan"] == 11
        assert json.loads((env.state_dir / "sriov" / "c1-net1").read_text())["DPDKMode"] is True
        assert env.call("DEL", conf, pod).exit_code == 0
        assert env.vf_config(env.sim.pf(0).pci, 0) == DEFAULT_VF
        assert env.leftovers() == []


def test_state_dirs_are_private(xxv: CniSim, tmp_path: Path) -> None:
    pci, _ = first_vf(xxv)
    pod = xxv.new_netns()
    assert xxv.call("ADD", netconf(pci, tmp_path), pod).exit_code == 0
    alloc = xxv.state_dir / "sriov" / "pci" / pci
    assert stat.S_IMODE(alloc.stat().st_mode) == 0o600
    assert os.path.exists(xxv.state_dir / "sriov" / "pci" / "vf_lock" / f"{pci}.lock")


def test_an_altname_equal_to_the_pod_ifname_does_not_block_the_move(xxv: CniSim, tmp_path: Path) -> None:
    """Kernels 5.5+ with udev keep old names as altnames; one equal to the pod's name must not clash."""
    pci, host_name = first_vf(xxv)
    with IPRoute(netns=xxv.host_netns) as ipr:
        ipr.link("property_add", index=ipr.link_lookup(ifname=host_name)[0], altname="net1")
    pod = xxv.new_netns()
    add = xxv.call("ADD", netconf(pci, tmp_path), pod)
    assert add.exit_code == 0, add.stdout
    assert "net1" in xxv.pod_links(pod)
    assert xxv.call("DEL", netconf(pci, tmp_path), pod).exit_code == 0
    assert host_name in xxv.host_links()


def test_a_pod_link_with_the_vfs_ifindex_does_not_block_the_move(xxv: CniSim, tmp_path: Path) -> None:
    """The one-request move keeps the VF's ifindex; when the pod already uses that index the kernel
    refuses the move and ADD moves it again with the index left to the kernel."""
    pci, host_name = first_vf(xxv)
    with IPRoute(netns=xxv.host_netns) as ipr:
        vf_index = ipr.link_lookup(ifname=host_name)[0]
    pod = xxv.new_netns()
    with IPRoute(netns=pod) as ipr:
        ipr.link("add", ifname="taken", kind="veth", index=vf_index, peer={"ifname": "taken-peer"})
        assert ipr.link_lookup(ifname="taken") == [vf_index]
    conf = netconf(pci, tmp_path, vlan=10, mac="02:00:00:00:00:0a")
    add = xxv.call("ADD", conf, pod)
    assert add.exit_code == 0, add.stdout
    links = xxv.pod_links(pod)
    assert links["net1"]["mac"] == "02:00:00:00:00:0a" and links["net1"]["up"] and links["net1"]["alias"] == pci
    assert "taken" in links and host_name not in xxv.host_links()
    assert xxv.call("DEL", conf, pod).exit_code == 0
    assert xxv.host_links()[host_name]["alias"] == pci
