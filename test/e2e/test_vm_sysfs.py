"""SR-IOV on the real Linux igb/igbvf drivers against QEMU's emulated Intel 82576, with plain sysfs.

One guest boot runs test/support/vm_sysfs_checks.py (the steps the config daemon will take: MTU 9000,
sriov_numvfs=4, VF MACs/VLAN/trust/spoofchk/rates, PF up, reset, too many VFs) and every test asserts on
its recorded results.
The operations the igb emulation does not support are asserted as the failures they are, with the reason,
so a QEMU or kernel that starts supporting them turns these tests red and the expectation gets updated.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest

from test.support.vm_guest import GuestVM

pytestmark = pytest.mark.e2e

CHECKS = Path(__file__).resolve().parents[1] / "support" / "vm_sysfs_checks.py"
NUM_VFS = 4
VF_MACS = [f"02:00:00:00:00:{0x10 + i:02x}" for i in range(NUM_VFS)]


@pytest.fixture(scope="module")
def guest(vm_ready: None, vm_timings: dict[str, float]) -> dict[str, Any]:
    vm = GuestVM(igb=2)
    running = vm.start(f"exec python3 {CHECKS} {NUM_VFS}", timeout=300)
    rc, console = running.wait(330)
    assert rc == 0, f"guest checks exited {rc}\n{console[-4000:]}\n{running.progress[-2000:]}"
    lines = [ln for ln in running.output.splitlines() if ln.startswith("SRIOVOP-RESULT ")]
    assert len(lines) == 1, f"expected one SRIOVOP-RESULT line\n{console[-4000:]}"
    result: dict[str, Any] = json.loads(lines[0].split(" ", 1)[1])
    assert running.boot_seconds is not None and running.exited_at is not None
    vm_timings["boot_seconds"] = running.boot_seconds
    vm_timings["guest_uptime_at_ready_seconds"] = running.guest_uptime_at_ready or 0.0
    vm_timings["sysfs_run_total_seconds"] = running.exited_at - running.started
    vm_timings["vf_create_4_seconds"] = result["steps"]["create"]["total_seconds"]
    vm_timings["vf_reset_seconds"] = result["steps"]["reset"]["seconds"]
    return result


def test_two_82576_pfs_found_with_seven_total_vfs(guest: dict[str, Any]) -> None:
    pfs = guest["pfs"]
    assert [(p["vendor"], p["device"], p["driver"]) for p in pfs] == [("0x8086", "0x10c9", "igb")] * 2
    assert [p["totalvfs"] for p in pfs] == ["7", "7"], "Linux igb caps the 82576 at 7 VFs"
    assert [p["numvfs"] for p in pfs] == ["0", "0"]
    assert [p["netdevs"] for p in pfs] == [["eth0"], ["eth1"]]


def test_pf_mtu_9000_and_link_up(guest: dict[str, Any]) -> None:
    steps = guest["steps"]
    assert steps["mtu_9000"]["rc"] == 0, steps["mtu_9000"]
    assert steps["mtu_after"] == "9000"
    assert steps["pf_up"]["rc"] == 0, steps["pf_up"]
    assert steps["pf_carrier"] == "1", "the emulated PF gets a link once up (user-mode netdev behind it)"
    assert steps["pf_speed"] == "1000"


def test_four_vfs_created_and_bound_to_igbvf(guest: dict[str, Any]) -> None:
    create = guest["steps"]["create"]
    assert create["ok"], create
    assert create["numvfs"] == str(NUM_VFS)
    vfs = create["vfs"]
    assert [v["index"] for v in vfs] == list(range(NUM_VFS))
    assert {(v["vendor"], v["device"], v["driver"]) for v in vfs} == {("0x8086", "0x10ca", "igbvf")}
    # VF offset 0x80, stride 2 behind the PF at 01:00.0
    assert [v["bdf"] for v in vfs] == ["0000:01:10.0", "0000:01:10.2", "0000:01:10.4", "0000:01:10.6"]
    assert all(len(v["netdevs"]) == 1 for v in vfs)


def test_vf_admin_macs_show_in_ip_link(guest: dict[str, Any]) -> None:
    steps = guest["steps"]
    assert [s["rc"] for s in steps["vf_mac"]] == [0] * NUM_VFS, steps["vf_mac"]
    text = steps["ip_link_show"]["stdout"]
    for i, mac in enumerate(VF_MACS):
        assert f"vf {i}     link/ether {mac}" in text, text
    (link,) = json.loads(steps["ip_link_show_json"]["stdout"])
    assert [(v["vf"], v["address"]) for v in link["vfinfo_list"]] == list(enumerate(VF_MACS))


def test_vf_vlan_trust_spoofchk_are_supported(guest: dict[str, Any]) -> None:
    steps = guest["steps"]
    for name in ("vf_vlan", "vf_trust", "vf_spoofchk"):
        assert steps[name]["rc"] == 0, steps[name]
    (link,) = json.loads(steps["ip_link_show_json"]["stdout"])
    vf1 = link["vfinfo_list"][1]
    assert vf1["vlan_list"] == [{"vlan": 100}]
    assert vf1["trust"] is True
    assert vf1["spoofchk"] is False


def test_expected_failure_vf_link_state_is_not_supported_by_igb(guest: dict[str, Any]) -> None:
    """Expected failure: igb has no ndo_set_vf_link_state, so `vf N state enable` is EOPNOTSUPP."""
    step = guest["steps"]["vf_link_state"]
    assert step["rc"] != 0, f"igb unexpectedly accepted a VF link state: {step}"
    assert "Operation not supported" in step["stderr"], step


def test_expected_failure_vf_max_tx_rate_needs_pf_link(guest: dict[str, Any]) -> None:
    """Expected failure: igb_ndo_set_vf_bw returns EINVAL while the PF has no link (STATUS.LU clear),
    so a daemon that sets VF rates must bring the PF up first."""
    step = guest["steps"]["vf_max_tx_rate_link_down"]
    assert step["rc"] != 0, f"igb unexpectedly accepted a VF rate with the PF link down: {step}"
    assert "Invalid argument" in step["stderr"], step


def test_vf_max_tx_rate_accepted_with_pf_link_up(guest: dict[str, Any]) -> None:
    step = guest["steps"]["vf_max_tx_rate"]
    assert step["rc"] == 0, step
    (link,) = json.loads(guest["steps"]["ip_link_show_json"]["stdout"])
    assert link["vfinfo_list"][0]["rate"]["max_tx"] == 100


def test_expected_failure_vf_rates_igb_cannot_do(guest: dict[str, Any]) -> None:
    """Expected failures: igb rejects any min_tx_rate and a max_tx_rate above the PF's 1000 Mb/s link
    with EINVAL; the rejected values are not applied."""
    steps = guest["steps"]
    for name in ("vf_min_tx_rate", "vf_max_tx_rate_above_link"):
        assert steps[name]["rc"] != 0, f"igb unexpectedly accepted {steps[name]['cmd']}"
        assert "Invalid argument" in steps[name]["stderr"], steps[name]
    (link,) = json.loads(steps["ip_link_show_json"]["stdout"])
    assert link["vfinfo_list"][2]["rate"]["max_tx"] == 0
    assert link["vfinfo_list"][3]["rate"]["min_tx"] == 0


def test_eight_vfs_rejected_with_erange_while_enabled(guest: dict[str, Any]) -> None:
    step = guest["steps"]["too_many_while_enabled"]
    assert not step["ok"]
    assert step["errno"] == errno.ERANGE, step
    assert step["numvfs"] == str(NUM_VFS), "a rejected write must leave the VFs as they were"


def test_reset_to_zero_removes_vfs(guest: dict[str, Any]) -> None:
    step = guest["steps"]["reset"]
    assert step["ok"], step
    assert step["numvfs"] == "0"
    assert step["vfs"] == []
    assert any("IOV Disabled" in line for line in guest["steps"]["dmesg_tail"])


def test_eight_vfs_rejected_with_erange_from_zero(guest: dict[str, Any]) -> None:
    step = guest["steps"]["too_many"]
    assert not step["ok"]
    assert step["errno"] == errno.ERANGE, step
    assert step["error"] == "Numerical result out of range"
    assert step["numvfs"] == "0"


def test_modprobe_in_guest_uses_the_guest_kernel_modules(guest: dict[str, Any]) -> None:
    """The daemon may load drivers (vfio-pci); the host's kmod must find the guest kernel's modules."""
    step = guest["steps"]["modprobe_vfio_pci"]
    assert step["rc"] == 0, step
    assert guest["steps"]["vfio_pci_loaded"] is True
