"""Switchdev on the simulated SR-IOV host (sriovop/sim/eswitch.py behaves like mlx5 and ice): eSwitch mode through
devlink, VF representors named and reported, hw-tc-offload, vDPA, upstream's order, and going back to
legacy really going back. Every test here runs against the simulated host."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest

from sriovop.host import ApplyError, Host
from sriovop.host import steps as S
from sriovop.host.errors import ValidationError
from sriovop.host.plan import validate_spec_interfaces
from sriovop.host.sysfs import link_basename, listdir, read_str
from sriovop.sim.host import SimHost
from test.support.host_sim import applier, pf_status, sim_host


def spec(pf: dict[str, Any], num_vfs: int, mode: str, groups: list[dict[str, Any]] | None = None,
         mtu: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": num_vfs,
                           "eSwitchMode": mode}
    if mtu:
        out["mtu"] = mtu
    out["vfGroups"] = groups if groups is not None else [group(f"0-{num_vfs - 1}")]
    return out


def group(rng: str, vdpa: str = "") -> dict[str, Any]:
    g = {"resourceName": "r" + rng.replace("-", ""), "deviceType": "netdevice", "vfRange": rng, "policyName": "p"}
    if vdpa:
        g["vdpaType"] = vdpa
    return g


def representors(host: Host) -> dict[str, str]:
    """Every netdev whose phys_port_name says it is a VF representor: name → phys_port_name."""
    out = {}
    for name in listdir(host.paths.class_net):
        port = read_str(host.paths.class_net / name / "phys_port_name") or ""
        if port.startswith("pf") and "vf" in port:
            out[name] = port
    return out


def vdpa_devices(host: Host) -> dict[str, str]:
    devices = host.paths.under("sys/bus/vdpa/devices")
    return {n: link_basename(devices / n / "driver") or "" for n in listdir(devices)}


def rules(host: Host, pci: str) -> list[str]:
    return sorted(n for n in listdir(host.paths.under("etc/udev/rules.d")) if pci in n)


def test_mlx5_switchdev_representors_offload_vdpa_then_back_to_legacy(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["cx6dx:1"]) as (sim, host):
        host.init()
        pf = host.discover()[0]
        pci, name = pf["pciAddress"], pf["name"]
        assert pf["eSwitchMode"] == "legacy" and representors(host) == {}
        assert sim.kernel.eswitch.modules == set()
        steps: list[str] = []
        ap = applier(host, hook=lambda step, _pf: steps.append(step))

        groups = [group("0-1"), group("2", "virtio"), group("3", "vhost")]
        res = ap.apply([spec(pf, 4, "switchdev", groups)])
        assert res.configured == [pci]

        st = pf_status(host, pci)
        assert st["eSwitchMode"] == "switchdev" and st["numVfs"] == 4 and st["name"] == name
        assert [v["driver"] for v in st["Vfs"]] == ["mlx5_core"] * 4
        # Representors: one per VF, renamed by the 20-switchdev udev rule to <pf>_<vf>, reported per VF.
        assert [v["representorName"] for v in st["Vfs"]] == [f"{name}_{i}" for i in range(4)]
        assert representors(host) == {f"{name}_{i}": f"pf0vf{i}" for i in range(4)}
        switch_id = read_str(host.paths.class_net / name / "phys_switch_id")
        assert switch_id and all(read_str(host.paths.class_net / f"{name}_{i}" / "phys_switch_id") == switch_id
                                 for i in range(4))
        # vDPA devices as the groups asked, bound to the matching vdpa bus driver, reported per VF.
        vfs = [v["pciAddress"] for v in st["Vfs"]]
        assert vdpa_devices(host) == {f"vdpa:{vfs[2]}": "virtio_vdpa", f"vdpa:{vfs[3]}": "vhost_vdpa"}
        assert [v.get("vdpaType", "") for v in st["Vfs"]] == ["", "", "virtio", "vhost"]
        assert sim.kernel.eswitch.modules == {"virtio_vdpa", "vhost_vdpa"}  # loaded for the vdpa groups
        # Offload: hw-tc-offload on the PF and every VF netdev, flow steering in software-managed mode.
        assert host.eswitch.features(name)["hw-tc-offload"] is True
        assert all(host.eswitch.features(v["name"])["hw-tc-offload"] for v in st["Vfs"])
        assert host.eswitch.devlink_param(pci, "flow_steering_mode") == "smfs"
        assert rules(host, pci) == [f"10-nm-disable-{pci}.rules", f"10-pf-name-{pci}.rules",
                                    f"20-switchdev-{pci}.rules"]
        rule = (host.paths.under("etc/udev/rules.d") / f"20-switchdev-{pci}.rules").read_text()
        assert f'ATTRS{{phys_switch_id}}=="{switch_id}"' in rule and f'NAME="{name}_$env{{NUMBER}}"' in rule
        # Upstream's order: offload before any VF exists; VFs created in legacy, unbound, then switchdev;
        # the representor rule once phys_switch_id is readable; udev reloaded after the PF.
        order = [s for s in steps if s in (S.ENABLE_TC_OFFLOAD, S.SET_FLOW_STEERING, S.CLEAR_NUMVFS,
                                           S.WRITE_NUMVFS, S.WAIT_VFS, S.UNBIND_VFS, S.SET_ESWITCH_MODE,
                                           S.CREATE_VDPA, S.RELOAD_UDEV)]
        assert order == [S.ENABLE_TC_OFFLOAD, S.SET_FLOW_STEERING, S.CLEAR_NUMVFS, S.WRITE_NUMVFS, S.WAIT_VFS,
                         S.UNBIND_VFS, S.SET_ESWITCH_MODE, S.ENABLE_TC_OFFLOAD, S.ENABLE_TC_OFFLOAD,
                         S.ENABLE_TC_OFFLOAD, S.CREATE_VDPA, S.ENABLE_TC_OFFLOAD, S.CREATE_VDPA, S.RELOAD_UDEV]

        # Nothing left to do the second time.
        assert ap.apply([spec(pf, 4, "switchdev", groups)]).unchanged == [pci]

        # Back to legacy: representors, vDPA devices and switchdev rules are gone, the VFs stay.
        res = ap.apply([spec(pf, 4, "legacy")])
        assert res.configured == [pci]
        st = pf_status(host, pci)
        assert st["eSwitchMode"] == "legacy" and st["numVfs"] == 4
        assert [v["driver"] for v in st["Vfs"]] == ["mlx5_core"] * 4
        assert all("representorName" not in v and "vdpaType" not in v for v in st["Vfs"])
        assert representors(host) == {} and vdpa_devices(host) == {}
        assert read_str(host.paths.class_net / name / "phys_switch_id") is None
        assert rules(host, pci) == [f"10-nm-disable-{pci}.rules"]
        assert sim.kernel.eswitch.states[pci].mode == "legacy"

        # Switchdev again, then the PF leaves the spec: reset to the checkpointed legacy mode and 0 VFs.
        ap.apply([spec(pf, 2, "switchdev")])
        assert pf_status(host, pci)["eSwitchMode"] == "switchdev" and len(representors(host)) == 2
        res = ap.apply([])
        assert res.reset == [pci]
        st = pf_status(host, pci)
        assert st["eSwitchMode"] == "legacy" and "numVfs" not in st
        assert representors(host) == {} and rules(host, pci) == []


def test_ice_switchdev_changes_the_mode_with_zero_vfs(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["e810:1"]) as (_sim, host):
        host.init()
        pf = host.discover()[0]
        pci, name = pf["pciAddress"], pf["name"]
        ap = applier(host)
        ap.apply([spec(pf, 3, "legacy")])
        assert pf_status(host, pci)["numVfs"] == 3
        # The simulated ice refuses a mode change while VFs exist: only the ice order gets through.
        ap.apply([spec(pf, 3, "switchdev")])
        st = pf_status(host, pci)
        assert st["eSwitchMode"] == "switchdev" and [v["driver"] for v in st["Vfs"]] == ["iavf"] * 3
        assert [v["representorName"] for v in st["Vfs"]] == [f"{name}_{i}" for i in range(3)]
        # No flow_steering_mode param on ice: skipped, not an error.
        assert host.eswitch.devlink_param(pci, "flow_steering_mode") is None


@pytest.mark.parametrize(("nic", "step", "code"), [
    ("xxv710:1", S.SET_ESWITCH_MODE, errno.EOPNOTSUPP),   # i40e: no switchdev
    ("82576:1", S.ENABLE_TC_OFFLOAD, errno.EOPNOTSUPP),   # igb: no TC offload
])
def test_switchdev_on_a_nic_without_it_fails_the_pf_with_the_step(tmp_path: Path, nic: str, step: str,
                                                                   code: int) -> None:
    with sim_host(tmp_path, [nic]) as (_sim, host):
        host.init()
        pf = host.discover()[0]
        with pytest.raises(ApplyError) as info:
            applier(host).apply([spec(pf, 2, "switchdev")])
        assert info.value.pf == pf["pciAddress"] and info.value.step == step and info.value.errno == code
        assert f"pf {pf['pciAddress']}: step {step}:" in str(info.value)
        st = pf_status(host, pf["pciAddress"])
        assert "numVfs" not in st and st["eSwitchMode"] == "legacy"  # the failed PF was reset


def test_vdpa_on_intel_fails_at_create_vdpa(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["e810:1"]) as (_sim, host):
        host.init()
        pf = host.discover()[0]
        with pytest.raises(ApplyError) as info:
            applier(host).apply([spec(pf, 2, "switchdev", [group("0-1", "virtio")])])
        assert info.value.step == S.CREATE_VDPA and info.value.errno == errno.ENODEV
        assert "mlx5_vdpa" in info.value.reason


def test_vdpa_module_that_cannot_be_loaded_fails_with_its_name(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["cx6dx:1"]) as (sim, host):
        host.init()
        pf = host.discover()[0]
        sim.kernel.eswitch.missing_modules = {"vhost_vdpa"}
        with pytest.raises(ApplyError) as info:
            applier(host).apply([spec(pf, 2, "switchdev", [group("0-1", "vhost")])])
        assert info.value.step == S.CREATE_VDPA and info.value.errno == errno.ENOENT
        assert "loading kernel module vhost_vdpa" in info.value.reason


def test_simulated_mlx5_eswitch_rules(tmp_path: Path) -> None:
    """The simulator itself: mode changes need unbound VFs, representors exist only in switchdev mode,
    flow_steering_mode changes only in legacy mode."""
    with SimHost(tmp_path / "host", ["cx6dx:1"]) as sim:
        k, pf = sim.kernel, sim.pf(0)
        k.write(f"sys/bus/pci/devices/{pf.pci}/sriov_numvfs", "2")
        with pytest.raises(OSError) as busy:
            k.eswitch.set_mode(pf.pci, "switchdev")
        assert busy.value.errno == errno.EBUSY and "bound" in str(busy.value)
        for vf in pf.vfs.values():
            k.write("sys/bus/pci/drivers/mlx5_core/unbind", vf.pci)
        k.eswitch.set_mode(pf.pci, "switchdev")
        reps = {n: read_str(sim.root / "sys/class/net" / n / "phys_port_name")
                for n in k.eswitch.states[pf.pci].reps.values()}
        assert sorted(reps.values()) == ["pf0vf0", "pf0vf1"] and all(n.startswith("eth") for n in reps)
        with pytest.raises(OSError) as fs:
            k.eswitch.set_param(pf.pci, "flow_steering_mode", "smfs")
        assert fs.value.errno == errno.EBUSY
        k.eswitch.set_mode(pf.pci, "legacy")
        assert k.eswitch.states[pf.pci].reps == {}
        assert not any((sim.root / "sys/class/net" / n).exists() for n in reps)


def test_vdpa_spec_without_switchdev_is_refused_naming_the_field() -> None:
    iface = {"pciAddress": "0000:18:00.0", "numVfs": 2,
             "vfGroups": [{"vfRange": "0-1", "deviceType": "netdevice", "vdpaType": "virtio"}]}
    with pytest.raises(ValidationError, match=r"vfGroups\[0\]\.vdpaType: vDPA needs eSwitchMode switchdev"):
        validate_spec_interfaces([iface])
    iface["eSwitchMode"] = "switchdev"
    iface["vfGroups"][0]["deviceType"] = "vfio-pci"
    with pytest.raises(ValidationError, match="vDPA needs deviceType netdevice"):
        validate_spec_interfaces([iface])
