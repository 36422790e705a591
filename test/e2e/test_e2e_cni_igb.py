"""Our `sriov` CNI on a real kernel: the static shim and `sriovop cni-server` give an igbvf VF of QEMU's
emulated Intel 82576 to a fresh network namespace and take it back.

Host: the QEMU guest (real igb/igbvf drivers; the guest runs this host's venv, the built shim and the
host-local IPAM plugin over 9p). One boot runs test/support/vm_cni_checks.py, which records everything;
the tests assert on the record. ADD with VLAN 100, a MAC and host-local IPAM into `ip netns add pod1`;
DEL; a pod namespace deleted before its DEL (the kernel returns the VF to the host); then timed ADD/DEL
cycles (median ADD printed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sriovop.devcluster.images.cni_shim import shim_binary
from test.support.vm_guest import GuestVM

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

CHECKS = Path(__file__).resolve().parents[1] / "support" / "vm_cni_checks.py"
CYCLES = 10
MAC = "02:00:00:00:aa:01"


@pytest.fixture(scope="module")
def record(vm_ready: None, vm_timings: dict[str, float]) -> dict[str, Any]:
    shim = shim_binary()
    running = GuestVM(igb=1).start(f"exec {sys.executable} {CHECKS} {shim} {CYCLES}", timeout=1200)
    rc, console = running.wait(1230)
    lines = [ln for ln in running.output.splitlines() if ln.startswith("SRIOVOP-RESULT ")]
    assert rc == 0 and len(lines) == 1, f"guest checks exited {rc}\n{console[-6000:]}\n{running.progress[-2000:]}"
    result: dict[str, Any] = json.loads(lines[0].split(" ", 1)[1])
    assert "error" not in result, result
    if result.get("add_median_seconds") is not None:
        vm_timings["cni_add_median_seconds"] = result["add_median_seconds"]
        print(json.dumps({"cni_add_median_seconds": result["add_median_seconds"],
                          "cni_add_seconds": result["add_seconds"]}))
    return result


def test_add_puts_the_igbvf_vf_in_the_netns_with_mac_vlan_and_ip(record: dict[str, Any]) -> None:
    assert record["vf"]["driver"] == "igbvf"
    assert record["add"]["rc"] == 0, (record["add"], record["server_log_tail"])
    result = json.loads(record["add"]["stdout"])
    assert result["interfaces"][0]["mac"] == MAC and result["interfaces"][0]["pciID"] == record["vf"]["pci"]
    pod = record["pod"]
    assert (pod["driver"], pod["pci"], pod["mac"], pod["up"]) == ("igbvf", record["vf"]["pci"], MAC, True)
    assert pod["ips"] == [result["ips"][0]["address"]] and pod["ips"][0].startswith("10.88.0.")
    assert record["host_has_vf_name_after_add"] is False
    # What `ip link show eth0` says about VF 0 while the pod has it.
    vf = record["pf_vf_after_add"]
    assert vf["vlan_list"] == [{"vlan": 100}] and vf["address"] == MAC, vf


def test_del_returns_the_vf_with_its_name_and_mac(record: dict[str, Any]) -> None:
    assert record["del"]["rc"] == 0, record["del"]
    after = record["after_del"]
    assert (after["name"], after["mac"]) == (record["vf"]["name"], record["vf"]["mac"])
    assert not [v for v in after["pf_vf"].get("vlan_list", []) if v.get("vlan")], after["pf_vf"]
    # The pod's MAC is gone from the PF. igb reports a VF's address as the last MAC set for it, by the PF
    # or by the VF itself: after DEL that is the pre-ADD value or, once the VF has put its own original
    # MAC back, that MAC.
    assert after["pf_vf"]["address"] != MAC
    assert after["pf_vf"]["address"] in (record["pf_vf_before"]["address"], record["vf"]["mac"]), \
        (after["pf_vf"], record["pf_vf_before"], record["vf"])


def test_del_after_the_netns_died_restores_the_vf_the_kernel_returned(record: dict[str, Any]) -> None:
    assert record["returned_by_kernel_as"] == "net1", "the kernel moves a physical netdev back to init_net"
    dead = record["dead_netns_del"]
    assert dead["add_rc"] == 0 and dead["rc"] == 0, dead
    assert (dead["name"], dead["mac"]) == (record["vf"]["name"], record["vf"]["mac"])


def test_timed_cycles_leave_nothing_behind(record: dict[str, Any]) -> None:
    assert record["cycle_errors"] == []
    assert len(record["add_seconds"]) == CYCLES
    final = record["final"]
    assert (final["name"], final["mac"]) == (record["vf"]["name"], record["vf"]["mac"])
    assert final["state_files"] == []
