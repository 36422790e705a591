"""Kernel arguments, modules and the RDMA netns mode on the simulated SR-IOV host (sriovop/sim/system.py: modules
appear under sys/module when loaded, the boot loader reads the boot configuration at sim.reboot())."""

from __future__ import annotations

import errno
from dataclasses import replace
from pathlib import Path

import pytest

from sriovop.daemon.hostref import HostRef
from sriovop.host import ApplyError, Host, HostError
from sriovop.host.bootconfig import bls_options
from sriovop.host.modules import modules_for_group, modules_for_pf
from sriovop.host.plugins import Decision, GenericPlugin
from sriovop.host.rdma import MODPROBE_CONF
from sriovop.host.sysfs import link_basename
from test.support.host_sim import FAST, applier, sim_host

VFIO = [{"resourceName": "dpdk", "deviceType": "vfio-pci", "vfRange": "0-1"}]
IOMMU = ["intel_iommu=on", "iommu=pt"]


def _iface(pf: dict, num_vfs: int, groups: list[dict] | None = None, **extra: object) -> dict:
    return {"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": num_vfs,
            "vfGroups": groups or [], **extra}


def _state(host: Host, interfaces: list[dict], **system: str) -> dict:
    return {"spec": {"interfaces": interfaces, "system": system}, "status": {"interfaces": host.discover()}}


# --- modules -------------------------------------------------------------------------------------
def test_modules_per_group_as_upstream() -> None:
    assert modules_for_group({"deviceType": "vfio-pci"}) == ["vfio_pci"]
    assert modules_for_group({"deviceType": "netdevice", "vdpaType": "virtio"}) == ["virtio_vdpa"]
    assert modules_for_group({"deviceType": "netdevice", "vdpaType": "vhost"}) == ["vhost_vdpa"]
    assert modules_for_group({}) == []
    assert modules_for_pf({"vfGroups": [{"deviceType": "vfio-pci"}, {"deviceType": "vfio-pci", "vdpaType": ""},
                                        {"vdpaType": "vhost"}]}) == ["vfio_pci", "vhost_vdpa"]


def test_vfio_pci_is_loaded_before_a_vf_is_bound_to_it(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (_sim, host):
        pf = host.discover()[0]
        assert not host.paths.sys_module("vfio_pci").exists()
        assert not host.paths.driver_dir("vfio-pci").exists(), "no vfio-pci driver before its module"
        applier(host).apply([_iface(pf, 2, VFIO)])
        assert host.paths.sys_module("vfio_pci").is_dir()
        vfs = [link_basename(host.paths.device(pf["pciAddress"]) / f"virtfn{i}") for i in range(2)]
        assert [link_basename(host.paths.device(str(v)) / "driver") for v in vfs] == ["vfio-pci"] * 2


def test_a_module_that_cannot_be_loaded_fails_the_pf_naming_it(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"], unavailable_modules=["vfio_pci"]) as (sim, host):
        pf = host.discover()[0]
        with pytest.raises(ApplyError) as err:
            applier(host).apply([_iface(pf, 2, VFIO)])
        assert (err.value.pf, err.value.step, err.value.errno) == (pf["pciAddress"], "load-kernel-modules",
                                                                   errno.ENOENT)
        assert "kernel module vfio_pci cannot be loaded" in str(err.value)
        assert sim.kernel.pfs[pf["pciAddress"]].numvfs == 0, "nothing was changed on the PF"


def test_tun_and_vhost_net_are_loaded_when_the_daemon_opens_the_host(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"], unavailable_modules=["vhost_net"]) as (sim, _host):
        ref = HostRef(sim.root, kernel=sim.access)
        try:
            host = ref.get()
            assert host.paths.sys_module("tun").is_dir()
            assert not host.paths.sys_module("vhost_net").exists()
            assert "vhost_net" in ref.module_errors and "not found" in ref.module_errors["vhost_net"]
        finally:
            ref.close()


# --- kernel arguments ----------------------------------------------------------------------------
def test_vfio_kernel_args_are_written_to_the_bls_entry_and_reach_cmdline_after_reboot(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (sim, host):
        pf = host.discover()[0]
        plugin = GenericPlugin(host, options=FAST)
        spec = [_iface(pf, 2, VFIO)]
        assert plugin.on_node_state_change(_state(host, spec)) == Decision(True, True)
        (entry,) = host.kargs.boot.bls_entries()
        assert bls_options(entry.read_text()).split()[-2:] == IOMMU
        assert plugin.missing_kernel_args(_state(host, spec)) == IOMMU
        sim.reboot()  # the boot loader passes the entry's options to the new kernel
        host = Host(sim.root, kernel=sim.access)
        try:
            assert set(IOMMU) <= host.kargs.current()
            plugin = GenericPlugin(host, options=FAST)
            assert plugin.on_node_state_change(_state(host, spec)) == Decision(False, False)
            plugin.apply()
            assert not plugin.check_status_changes(_state(host, spec))
            # The policy goes: the arguments the daemon added leave the boot configuration (not /proc/cmdline:
            # nothing needs them gone before the next boot, so no reboot).
            assert plugin.on_node_state_change(_state(host, [])).reboot is False
            assert not set(IOMMU) & set(bls_options(entry.read_text()).split())
        finally:
            host.close()


def test_grub_defaults_host_and_a_broken_boot_loader(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"], boot_loader="broken") as (sim, host):
        pf = host.discover()[0]
        plugin = GenericPlugin(host, options=FAST)
        assert plugin.on_node_state_change(_state(host, [_iface(pf, 2, VFIO)])).reboot
        sim.reboot()
        assert not set(IOMMU) & set((sim.root / "proc/cmdline").read_text().split()), "ignored by the loader"
    with sim_host(tmp_path / "grub", ["xxv710:1"], boot_loader="grub") as (sim, host):
        pf = host.discover()[0]
        GenericPlugin(host, options=FAST).on_node_state_change(_state(host, [_iface(pf, 2, VFIO)]))
        assert 'intel_iommu=on iommu=pt"' in (sim.root / "etc/default/grub").read_text()
        sim.reboot()
        assert set(IOMMU) <= set((sim.root / "proc/cmdline").read_text().split())


def test_a_host_without_boot_configuration_fails_instead_of_rebooting(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"], boot_loader="none") as (_sim, host):
        pf = host.discover()[0]
        # Nothing to add: fine (this is most hosts without vfio-pci, e.g. the e2e guest's igb scenario).
        assert GenericPlugin(host, options=FAST).on_node_state_change(_state(host, [_iface(pf, 2)])) == \
            Decision(False, False)
        with pytest.raises(HostError, match="cannot add intel_iommu=on iommu=pt: the host has no boot configuration"):
            GenericPlugin(host, options=FAST).on_node_state_change(_state(host, [_iface(pf, 2, VFIO)]))


def test_a_host_booted_with_the_iommu_args_needs_no_boot_configuration_for_vfio(tmp_path: Path) -> None:
    """Host: the simulated host, booted with `intel_iommu=on iommu=pt` by other means (a VM's kernel command
    line) and without a boot configuration: the vfio-pci policy writes nothing, needs no reboot, and its
    VFs are bound to vfio-pci."""
    cmdline = "BOOT_IMAGE=/vmlinuz ro quiet " + " ".join(IOMMU)
    with sim_host(tmp_path, ["xxv710:1"], boot_loader="none", cmdline=cmdline) as (_sim, host):
        pf = host.discover()[0]
        plugin = GenericPlugin(host, options=FAST)
        spec = [_iface(pf, 2, VFIO)]
        assert plugin.on_node_state_change(_state(host, spec)) == Decision(False, False)
        assert host.kargs.added() == set() and not host.kargs.boot.bls_entries()
        plugin.apply()
        vfs = [vf for p in host.discover() for vf in p.get("Vfs") or []]
        assert [vf["driver"] for vf in vfs] == ["vfio-pci", "vfio-pci"], vfs
        assert not plugin.check_status_changes(_state(host, spec))

        # The drift check judges from the facts the daemon published on the same pass (contribute_facts):
        # `sriovop plan` and the node decide from one reading. Facts naming a kernel without the IOMMU
        # arguments make the same host drift.
        ns = _state(host, spec)
        seen = GenericPlugin(host, options=FAST)
        seen.contribute_facts(ns, replace(host.facts(), cmdline=frozenset({"ro"})))
        assert seen.check_status_changes(ns)


# --- RDMA ----------------------------------------------------------------------------------------
def test_rdma_mode_is_set_on_the_running_kernel_and_persisted(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["cx6dx:1"], modules=["ib_core"]) as (sim, host):
        assert host.io.rdma_netns_mode() == "shared"
        plugin = GenericPlugin(host, options=FAST)
        assert plugin.on_node_state_change(_state(host, [], rdmaMode="exclusive")) == Decision(False, False)
        assert host.io.rdma_netns_mode() == "exclusive"
        conf = host.paths.modprobe_d / MODPROBE_CONF
        assert conf.read_text().endswith("options ib_core netns_mode=0\n")
        assert "ib_core.netns_mode=0" in (host.kargs.boot.next_boot_args() or set())
        # Changed behind the daemon's back: drift, and the next pass sets it again.
        host.io.set_rdma_netns_mode("shared")
        assert plugin.check_status_changes(_state(host, [], rdmaMode="exclusive"))
        plugin.on_node_state_change(_state(host, [], rdmaMode="exclusive"))
        assert host.io.rdma_netns_mode() == "exclusive"
        # Unset: the option file and the argument go.
        plugin.on_node_state_change(_state(host, []))
        assert not conf.exists()
        assert not {a for a in host.kargs.boot.next_boot_args() or set() if a.startswith("ib_core.")}
        assert sim.kernel.system.rdma_mode == "exclusive", "the running kernel keeps its mode until a reboot"


def test_rdma_mode_needs_a_reboot_while_other_namespaces_exist(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["cx6dx:1"], modules=["ib_core"]) as (sim, host):
        sim.system_fault(rdma_netns_busy=True)
        plugin = GenericPlugin(host, options=FAST)
        ns = _state(host, [], rdmaMode="exclusive")
        assert plugin.on_node_state_change(ns) == Decision(True, True)
        assert plugin.missing_kernel_args(ns) == ["ib_core.netns_mode=0"]
        sim.reboot()
        host2 = Host(sim.root, kernel=sim.access)
        try:
            assert host2.io.rdma_netns_mode() == "exclusive", "ib_core.netns_mode=0 from the command line"
            assert GenericPlugin(host2, options=FAST).on_node_state_change(
                _state(host2, [], rdmaMode="exclusive")) == Decision(False, False)
        finally:
            host2.close()
        # Without the argument, the modprobe.d option alone makes the mode survive a reboot.
        entry = host.kargs.boot.bls_entries()[0]
        entry.write_text(entry.read_text().replace(" ib_core.netns_mode=0", ""))
        sim.reboot()
        host3 = Host(sim.root, kernel=sim.access)
        try:
            assert "ib_core.netns_mode=0" not in host3.kargs.current()
            assert host3.io.rdma_netns_mode() == "exclusive"
        finally:
            host3.close()


def test_is_rdma_vfs_are_rebound_as_upstream(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["cx6dx:1"]) as (_sim, host):
        pf = host.discover()[0]
        app = applier(host)
        unbound: list[str] = []
        unbind = app.drivers.unbind
        app.drivers.unbind = lambda pci: (unbound.append(pci), unbind(pci))[1]  # type: ignore[method-assign]
        group = {"resourceName": "rdma", "deviceType": "netdevice", "vfRange": "0-1", "isRdma": True}
        app.apply([_iface(pf, 2, [group])])
        vfs = [link_basename(host.paths.device(pf["pciAddress"]) / f"virtfn{i}") for i in range(2)]
        assert unbound == vfs, "each RDMA VF is unbound and bound again"
        assert [link_basename(host.paths.device(str(v)) / "driver") for v in vfs] == ["mlx5_core"] * 2
