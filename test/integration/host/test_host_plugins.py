"""Plugins on the simulated host: drain/reboot decisions, mellanox firmware via a fake mstconfig."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.host import Host, HostError
from sriovop.host.decision import HostFacts
from sriovop.host.errors import ValidationError
from sriovop.host.plugins import (
    Decision,
    GenericPlugin,
    IntelPlugin,
    MellanoxPlugin,
    VirtualPlugin,
    load_plugins,
)
from sriovop.host.plugins.mstconfig import MstconfigError
from sriovop.host.sysfs import link_basename
from test.support.host_sim import FAST, sim_host

FAKE_MST = Path(__file__).resolve().parents[2] / "support" / "host_fake_mstconfig.py"


def node_state(host: Host, interfaces: list[dict]) -> dict:
    return {"spec": {"interfaces": interfaces}, "status": {"interfaces": host.discover()}}


def iface(pf: dict, num_vfs: int, **extra: object) -> dict:
    return {"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": num_vfs, **extra}


VFIO = [{"resourceName": "dpdk", "deviceType": "vfio-pci", "vfRange": "0-1"}]


# --- generic -------------------------------------------------------------------------------------
def test_generic_drain_only_when_configured_vfs_change(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710"]) as (_sim, host):
        pf0, pf1 = host.discover()
        plugin = GenericPlugin(host, options=FAST)
        # 0 → N: nothing can be using VFs that do not exist yet.
        assert plugin.on_node_state_change(node_state(host, [iface(pf0, 4)])) == Decision(False, False)
        plugin.apply()
        assert not plugin.check_status_changes(node_state(host, [iface(pf0, 4)]))
        # Same spec again: no drain.
        assert plugin.on_node_state_change(node_state(host, [iface(pf0, 4)])) == Decision(False, False)
        # N → M on a configured PF: drain.
        assert plugin.on_node_state_change(node_state(host, [iface(pf0, 2)])) == Decision(True, False)
        # Adding a second PF from 0 while the first is unchanged: no drain.
        assert plugin.on_node_state_change(node_state(host, [iface(pf0, 4), iface(pf1, 2)])).drain is False
        # The configured PF leaving the spec: drain.
        assert plugin.on_node_state_change(node_state(host, [])) == Decision(True, False)
        plugin.apply()
        assert host.discover()[0].get("numVfs") is None


def test_generic_unconfigured_pf_with_foreign_vfs_does_not_drain(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["82576:1"]) as (_sim, host):
        pf0 = host.discover()[0]
        host.io.write(host.paths.device(pf0["pciAddress"]) / "sriov_numvfs", "3")  # someone else did this
        plugin = GenericPlugin(host, options=FAST)
        assert plugin.on_node_state_change(node_state(host, [iface(pf0, 5)])) == Decision(False, False)


def test_generic_detects_drift(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["82576:1"]) as (_sim, host):
        pf0 = host.discover()[0]
        plugin = GenericPlugin(host, options=FAST)
        plugin.on_node_state_change(node_state(host, [iface(pf0, 3)]))
        plugin.apply()
        assert not plugin.check_status_changes(node_state(host, [iface(pf0, 3)]))
        host.io.write(host.paths.device(pf0["pciAddress"]) / "sriov_numvfs", "0")
        assert plugin.check_status_changes(node_state(host, [iface(pf0, 3)]))


@pytest.mark.parametrize(
    ("cmdline", "cpu", "reboot"),
    [
        ("ro quiet", "GenuineIntel", True),
        ("ro intel_iommu=on iommu=pt", "GenuineIntel", False),
        ("ro iommu=pt", "GenuineIntel", True),
        ("ro iommu=pt", "AuthenticAMD", False),
    ],
)
def test_generic_reboot_for_vfio_kernel_args(tmp_path: Path, cmdline: str, cpu: str, reboot: bool) -> None:
    with sim_host(tmp_path, ["e810:1"], cmdline=cmdline, cpu_vendor=cpu) as (_sim, host):
        pf0 = host.discover()[0]
        decision = GenericPlugin(host).on_node_state_change(node_state(host, [iface(pf0, 2, vfGroups=VFIO)]))
        assert decision == Decision(drain=reboot, reboot=reboot)


def test_generic_reboot_after_enomem(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (sim, host):
        pf0 = host.discover()[0]
        sim.fault(pf0["pciAddress"], enomem=True)
        plugin = GenericPlugin(host, options=FAST)
        ns = node_state(host, [iface(pf0, 2)])
        assert plugin.on_node_state_change(ns) == Decision(False, False)
        with pytest.raises(HostError):
            plugin.apply()
        assert plugin.check_status_changes(ns)
        assert plugin.on_node_state_change(ns) == Decision(True, True)
        assert plugin.missing_kernel_args(ns) == ["pci=realloc"]


# --- mellanox ------------------------------------------------------------------------------------
@pytest.fixture
def fake_mstconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("mstconfig", "mstfwreset"):
        shutil.copy(FAKE_MST, bindir / tool)
        os.chmod(bindir / tool, 0o755)
    state, log = tmp_path / "fw.json", tmp_path / "mst.log"
    log.write_text("")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_MST_STATE", str(state))
    monkeypatch.setenv("FAKE_MST_LOG", str(log))
    yield state, log


def calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_mellanox_firmware_changes_mean_reboot(tmp_path: Path, fake_mstconfig: tuple[Path, Path]) -> None:
    state, log = fake_mstconfig
    with sim_host(tmp_path, ["cx6dx"]) as (_sim, host):
        p0, p1 = host.discover()
        card = p0["pciAddress"]
        state.write_text(json.dumps({card: {"SRIOV_EN": 0, "NUM_OF_VFS": 0, "LINK_TYPE_P1": 2, "LINK_TYPE_P2": 2}}))
        plugin = MellanoxPlugin(host)
        spec = [iface(p0, 8), iface(p1, 16, linkType="ib")]
        assert plugin.on_node_state_change(node_state(host, spec)) == Decision(True, True)
        plugin.apply()
        assert calls(log)[-2:] == [["-y", "-d", card, "set", "LINK_TYPE_P2=1", "NUM_OF_VFS=16", "SRIOV_EN=1"],
                                   ["mstfwreset", "-d", card, "--skip_driver", "-l", "3", "-y", "reset"]]
        assert json.loads(state.read_text())[card] == {"SRIOV_EN": 1, "NUM_OF_VFS": 16, "LINK_TYPE_P1": 2,
                                                       "LINK_TYPE_P2": 1}
        # Firmware now allows it: no reboot, nothing to write.
        assert plugin.on_node_state_change(node_state(host, spec)) == Decision(False, False)
        assert not plugin.check_status_changes(node_state(host, spec))
        n = len(calls(log))
        plugin.apply()
        assert len(calls(log)) == n


def test_mellanox_removed_nic_gets_zero_vfs_and_external_is_an_error(
    tmp_path: Path, fake_mstconfig: tuple[Path, Path]
) -> None:
    state, log = fake_mstconfig
    with sim_host(tmp_path, ["cx6dx:1"]) as (_sim, host):
        p0 = host.discover()[0]
        card = p0["pciAddress"]
        state.write_text(json.dumps({card: {"SRIOV_EN": 1, "NUM_OF_VFS": 8, "LINK_TYPE_P1": 2}}))
        plugin = MellanoxPlugin(host)
        with pytest.raises(HostError, match=f"pf {card}: firmware changes .* externallyManaged"):
            plugin.on_node_state_change(node_state(host, [iface(p0, 32, externallyManaged=True)]))
        host.records.save(card, iface(p0, 8))
        assert plugin.on_node_state_change(node_state(host, [])) == Decision(False, False)
        plugin.apply()
        assert calls(log)[-1] == ["-y", "-d", card, "set", "NUM_OF_VFS=0"]


def test_mellanox_without_mstconfig_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with sim_host(tmp_path, ["cx6dx:1"]) as (_sim, host):
        p0 = host.discover()[0]
        with pytest.raises(MstconfigError, match="mstconfig not found on PATH"):
            MellanoxPlugin(host).on_node_state_change(node_state(host, [iface(p0, 4)]))


def test_load_plugins_by_vendor_and_platform(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1", "cx6dx:1"]) as (_sim, host):
        status = host.discover()
        main, extra = load_plugins(host, status)
        assert isinstance(main, GenericPlugin)
        assert [type(p) for p in extra] == [IntelPlugin, MellanoxPlugin]
        _, extra = load_plugins(host, status, disabled=["mellanox"])
        assert [type(p) for p in extra] == [IntelPlugin]
        main, extra = load_plugins(host, status, platform="openstack")
        assert isinstance(main, VirtualPlugin) and extra == []
        with pytest.raises(ValueError, match="only 'mellanox'"):
            load_plugins(host, status, disabled=["intel"])


# --- virtual -------------------------------------------------------------------------------------
def test_virtual_binds_passthrough_devices_and_never_reboots(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (_sim, host):
        pf = host.discover()[0]
        host.io.write(host.paths.device(pf["pciAddress"]) / "sriov_numvfs", "1")
        vf = link_basename(host.paths.device(pf["pciAddress"]) / "virtfn0")
        assert vf
        plugin = VirtualPlugin(host)
        spec = [{"pciAddress": vf, "numVfs": 1, "vfGroups": [{"deviceType": "vfio-pci", "vfRange": "0-0"}]}]
        ns = {"spec": {"interfaces": spec}, "status": {"interfaces": []}}
        assert plugin.on_node_state_change(ns) == Decision(False, False)
        plugin.apply()
        assert link_basename(host.paths.device(vf) / "driver") == "vfio-pci"
        assert not plugin.check_status_changes(ns)
        assert plugin.on_node_state_change(ns) == Decision(False, False)
        spec2 = [{"pciAddress": vf, "numVfs": 1, "vfGroups": [{"deviceType": "netdevice", "vfRange": "0-0"}]}]
        ns2 = {"spec": {"interfaces": spec2}, "status": {"interfaces": []}}
        assert plugin.on_node_state_change(ns2) == Decision(True, False)
        plugin.apply()
        assert link_basename(host.paths.device(vf) / "driver") == "iavf"
        # Software bridges are refused on a virtual platform, not ignored.
        with pytest.raises(ValidationError, match=r"spec\.bridges: software bridges are not supported on virtual"):
            plugin.on_node_state_change({"spec": {"interfaces": spec2, "bridges": {"ovs": [{"name": "br-x"}]}},
                                         "status": {"interfaces": []}})


# --- mellanox: feature gate, lockdown, BlueField DPU ---------------------------------------------
def test_mellanox_firmware_reset_follows_the_gate_and_is_best_effort(
    tmp_path: Path, fake_mstconfig: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, log = fake_mstconfig
    with sim_host(tmp_path, ["cx6dx:1", "cx6dx:1"]) as (_sim, host):
        a, b = host.discover()
        fw = {"SRIOV_EN": 0, "NUM_OF_VFS": 0, "LINK_TYPE_P1": 2}
        state.write_text(json.dumps({a["pciAddress"]: dict(fw), b["pciAddress"]: dict(fw)}))
        plugin = MellanoxPlugin(host, firmware_reset=False)
        assert plugin.on_node_state_change(node_state(host, [iface(a, 4)])).reboot
        plugin.apply()
        assert [c[0] for c in calls(log)].count("mstfwreset") == 0, "gate off: no reset"
        # Gate on: a failing reset is logged and remembered, the other NIC is still reset.
        monkeypatch.setenv("FAKE_MSTFWRESET_FAIL", a["pciAddress"])
        plugin = MellanoxPlugin(host, firmware_reset=True)
        assert plugin.on_node_state_change(node_state(host, [iface(a, 8), iface(b, 2)])).reboot
        plugin.apply()
        resets = [c for c in calls(log) if c[0] == "mstfwreset"]
        assert [c[2] for c in resets] == [a["pciAddress"], b["pciAddress"]]
        assert list(plugin.reset_errors) == [a["pciAddress"]]
        assert "Failed to reset the device" in plugin.reset_errors[a["pciAddress"]]


def test_mellanox_under_kernel_lockdown_fails_a_mellanox_spec_and_queries_nothing(
    tmp_path: Path, fake_mstconfig: tuple[Path, Path]
) -> None:
    state, log = fake_mstconfig
    with sim_host(tmp_path, ["cx6dx:1", "xxv710:1"]) as (sim, host):
        mlx, intel = host.discover()
        state.write_text(json.dumps({mlx["pciAddress"]: {"SRIOV_EN": 0, "NUM_OF_VFS": 0}}))
        lockdown = sim.root / "sys/kernel/security/lockdown"
        lockdown.parent.mkdir(parents=True)
        lockdown.write_text("none [integrity] confidentiality\n")
        plugin = MellanoxPlugin(host)
        assert plugin.lockdown() == "integrity"
        with pytest.raises(HostError, match=rf"pf {mlx['pciAddress']}: kernel lockdown \(integrity\) is on"):
            plugin.on_node_state_change(node_state(host, [iface(mlx, 4)]))
        assert plugin.on_node_state_change(node_state(host, [iface(intel, 4)])) == Decision(False, False)
        assert calls(log) == [], "mstconfig is never run under lockdown"
        lockdown.write_text("[none] integrity confidentiality\n")
        assert plugin.lockdown() == ""


def test_mellanox_bluefield_in_dpu_mode_gets_no_firmware_changes(
    tmp_path: Path, fake_mstconfig: tuple[Path, Path]
) -> None:
    state, log = fake_mstconfig
    with sim_host(tmp_path, ["cx6dx:1"]) as (_sim, host):
        pf = host.discover()[0]
        dpu = {"INTERNAL_CPU_MODEL": "EMBEDDED_CPU(1)", "INTERNAL_CPU_PAGE_SUPPLIER": "ECPF(0)",
               "INTERNAL_CPU_ESWITCH_MANAGER": "ECPF(0)", "INTERNAL_CPU_IB_VPORT0": "ECPF(0)",
               "INTERNAL_CPU_OFFLOAD_ENGINE": "ENABLED(0)"}
        state.write_text(json.dumps({pf["pciAddress"]: {"SRIOV_EN": 1, "NUM_OF_VFS": 8, **dpu}}))
        plugin = MellanoxPlugin(host)
        assert plugin.on_node_state_change(node_state(host, [iface(pf, 8)])) == Decision(False, False)
        with pytest.raises(HostError, match=rf"pf {pf['pciAddress']}: .*BlueField in DPU mode"):
            plugin.on_node_state_change(node_state(host, [iface(pf, 16)]))
        assert not [c for c in calls(log) if "set" in c], "nothing written to a DPU's firmware"
        # The same card in ConnectX (NIC) mode is configured as any ConnectX. The mode loads at a boot,
        # and firmware queries are kept per boot: a new boot_id.
        nic_mode = {**dpu, "INTERNAL_CPU_PAGE_SUPPLIER": "EXT_HOST_PF(1)", "INTERNAL_CPU_OFFLOAD_ENGINE": "DISABLED(1)"}
        state.write_text(json.dumps({pf["pciAddress"]: {"SRIOV_EN": 1, "NUM_OF_VFS": 8, **nic_mode}}))
        host.paths.boot_id.write_text(str(uuid.uuid4()) + "\n")
        assert plugin.on_node_state_change(node_state(host, [iface(pf, 16)])).reboot


def test_mellanox_firmware_is_queried_once_per_boot_and_again_after_a_write(
    tmp_path: Path, fake_mstconfig: tuple[Path, Path]
) -> None:
    """On the simulated host with the fake mstconfig: a fresh plugin each pass, as the daemon builds them."""
    state, log = fake_mstconfig
    with sim_host(tmp_path, ["cx6dx:1", "cx6dx:1"]) as (_sim, host):
        a, b = host.discover()
        fw = {"SRIOV_EN": 1, "NUM_OF_VFS": 8, "LINK_TYPE_P1": 2}
        state.write_text(json.dumps({a["pciAddress"]: dict(fw)}))  # b cannot be queried yet

        def queries() -> list[str]:
            return [c[1] for c in calls(log) if c[-1] == "q"]

        def daemon_pass(spec: list[dict]) -> Decision:
            plugin = MellanoxPlugin(host)
            ns = node_state(host, spec)
            plugin.contribute_facts(ns, HostFacts())
            plugin.check_status_changes(ns)
            decision = plugin.on_node_state_change(ns)
            plugin.apply()
            return decision

        spec = [iface(a, 8)]
        for _ in range(3):
            assert daemon_pass(spec) == Decision(False, False)
        # a is queried once; b's failed query is not kept (asked again each pass, never fatal for facts).
        assert queries().count(a["pciAddress"]) == 1
        assert queries().count(b["pciAddress"]) == 3
        state.write_text(json.dumps({a["pciAddress"]: dict(fw), b["pciAddress"]: dict(fw)}))
        for _ in range(2):
            daemon_pass(spec)
        assert queries().count(b["pciAddress"]) == 4

        # A write (set + mstfwreset) drops the cache: the next pass reads the new settings once.
        assert daemon_pass([iface(a, 16)]) == Decision(True, True)
        assert ["-y", "-d", a["pciAddress"], "set", "NUM_OF_VFS=16"] in calls(log)
        before = len(queries())
        for _ in range(3):
            assert daemon_pass([iface(a, 16)]) == Decision(False, False), "re-read after the write"
        assert sorted(queries()[before:]) == sorted([a["pciAddress"], b["pciAddress"]])

        # A new boot: queried again, once.
        host.paths.boot_id.write_text(str(uuid.uuid4()) + "\n")
        before = len(queries())
        for _ in range(2):
            daemon_pass([iface(a, 16)])
        assert sorted(queries()[before:]) == sorted([a["pciAddress"], b["pciAddress"]])
