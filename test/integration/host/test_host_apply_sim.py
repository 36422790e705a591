"""Applying NodeState specs to the simulated host: the host ends up as asked, failures are typed."""

from __future__ import annotations

import dataclasses
import errno
import json
import time
from pathlib import Path

import pytest

from sriovop.host import ApplyError, ApplyErrors, Host, HostError
from sriovop.host import steps as S
from sriovop.host.kargs import PCI_REALLOC
from sriovop.host.sysfs import link_basename, read_str
from test.support.host_sim import FAST, applier, pf_status, sim_host


def spec(pf: dict, num_vfs: int, *, mtu: int = 0, groups: list[dict] | None = None) -> dict:
    out = {"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": num_vfs}
    if mtu:
        out["mtu"] = mtu
    if groups is not None:
        out["vfGroups"] = groups
    return out


def netdev_group(rng: str, mtu: int = 0) -> dict:
    g = {"resourceName": "net", "deviceType": "netdevice", "vfRange": rng, "policyName": "p"}
    if mtu:
        g["mtu"] = mtu
    return g


def vfio_group(rng: str) -> dict:
    return {"resourceName": "dpdk", "deviceType": "vfio-pci", "vfRange": rng, "policyName": "d"}


def test_zero_to_n_to_m_to_zero(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710"]) as (sim, host):
        host.init()
        pf0 = host.discover()[0]
        pci = pf0["pciAddress"]
        ap = applier(host)

        res = ap.apply([spec(pf0, 8, mtu=9000, groups=[netdev_group("0-5", 9000), vfio_group("6-7")])])
        assert res.configured == [pci]
        st = pf_status(host, pci)
        assert st["numVfs"] == 8 and st["mtu"] == 9000 and st["linkAdminState"] == "up"
        assert [v["driver"] for v in st["Vfs"]] == ["iavf"] * 6 + ["vfio-pci"] * 2
        assert [v.get("mtu") for v in st["Vfs"][:6]] == [9000] * 6
        # The admin MAC was pinned through the PF and the VF netdev carries it.
        pinned = {v["vfID"]: v["mac"] for v in st["Vfs"][:6]}
        assert all(sim.kernel.pfs[pci].vfs[i].admin_mac == mac for i, mac in pinned.items())
        # Every VF points back to its PF; the record says the operator configured this PF.
        dev = host.paths.device(pci)
        assert all(link_basename(host.paths.device(v["pciAddress"]) / "physfn") == pci for v in st["Vfs"])
        assert json.loads(host.paths.pci_record(pci).read_text())["numVfs"] == 8
        rule = (host.paths.root / f"etc/udev/rules.d/10-nm-disable-{pci}.rules").read_text()
        assert "0x154c" in rule and "0x1889" in rule and pci in rule
        assert read_str(dev / "sriov_numvfs") == "8"

        # Nothing to do the second time.
        res = ap.apply([spec(pf0, 8, mtu=9000, groups=[netdev_group("0-5", 9000), vfio_group("6-7")])])
        assert res.configured == [] and res.unchanged == [pci]

        # N → M: the kernel needs 0 first; VFs come back on the default driver, groups re-applied.
        ap.apply([spec(pf0, 3, mtu=9000, groups=[netdev_group("0-2", 1500)])])
        st = pf_status(host, pci)
        assert st["numVfs"] == 3 and [v["driver"] for v in st["Vfs"]] == ["iavf"] * 3
        assert [v["mtu"] for v in st["Vfs"]] == [1500] * 3
        assert sorted(n for n in sim.kernel.pfs[pci].vfs) == [0, 1, 2]

        # Leaving the spec resets: 0 VFs, MTU back to the checkpointed 1500, record gone.
        res = ap.apply([])
        assert res.reset == [pci]
        st = pf_status(host, pci)
        assert "numVfs" not in st and st["mtu"] == 1500
        assert not host.paths.pci_record(pci).exists()
        assert not (host.paths.root / f"etc/udev/rules.d/10-nm-disable-{pci}.rules").exists()
        assert not any(e.startswith("virtfn") for e in (p.name for p in dev.iterdir()))


def test_vf_moved_back_from_vfio_to_default_driver(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["e810:1"]) as (_sim, host):
        pf0 = host.discover()[0]
        ap = applier(host)
        ap.apply([spec(pf0, 2, groups=[vfio_group("0-1")])])
        assert [v["driver"] for v in pf_status(host, pf0["pciAddress"])["Vfs"]] == ["vfio-pci"] * 2
        ap.apply([spec(pf0, 2, groups=[netdev_group("0-1")])])
        vfs = pf_status(host, pf0["pciAddress"])["Vfs"]
        assert [v["driver"] for v in vfs] == ["iavf"] * 2
        assert all(v["name"] for v in vfs)


def test_reset_restores_checkpointed_mtu(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["cx6dx:1"]) as (_sim, host):
        pf0 = host.discover()[0]
        host.netlink.set_mtu(pf0["name"], 4000)  # the host's own setting before the operator ran
        host.init()
        ap = applier(host)
        ap.apply([spec(pf0, 2, mtu=9000)])
        assert pf_status(host, pf0["pciAddress"])["mtu"] == 9000
        ap.apply([])
        assert pf_status(host, pf0["pciAddress"])["mtu"] == 4000


def test_step_hook_sees_named_steps_in_upstream_order(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    with sim_host(tmp_path, ["82576:1"]) as (_sim, host):
        pf0 = host.discover()[0]
        ap = applier(host, hook=lambda step, pf: seen.append((step, pf)))
        ap.apply([spec(pf0, 1, mtu=9000, groups=[netdev_group("0-0", 9000)])])
    steps = [s for s, _ in seen]
    # One VF in one netdevice group with an MTU walks every apply step exactly once, in order.
    assert steps == list(S.APPLY_STEPS)
    assert {pf for _, pf in seen} == {pf0["pciAddress"]}


# --- kernel answers ------------------------------------------------------------------------------
def test_kernel_semantics_ebusy_erange_einval(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["82576:1"]) as (_sim, host):
        pci = host.discover()[0]["pciAddress"]
        numvfs = host.paths.device(pci) / "sriov_numvfs"
        host.io.write(numvfs, "3")
        with pytest.raises(OSError) as busy:
            host.io.write(numvfs, "5")
        assert busy.value.errno == errno.EBUSY
        with pytest.raises(OSError) as rng:
            host.io.write(numvfs, "8")
        assert rng.value.errno == errno.ERANGE
        with pytest.raises(OSError) as inval:
            host.io.write(numvfs, "many")
        assert inval.value.errno == errno.EINVAL
        host.io.write(numvfs, "3")  # same value: accepted, nothing changes
        host.io.write(numvfs, "0")
        host.io.write(numvfs, "5")
        assert read_str(numvfs) == "5"


def test_bind_unbind_override_move_vfs_between_drivers(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (_sim, host):
        pci = host.discover()[0]["pciAddress"]
        host.io.write(host.paths.device(pci) / "sriov_numvfs", "1")
        vf = link_basename(host.paths.device(pci) / "virtfn0")
        assert vf is not None
        vf_dev = host.paths.device(vf)
        assert link_basename(vf_dev / "driver") == "iavf" and (vf_dev / "net").is_dir()
        with pytest.raises(OSError) as e:  # no vfio-pci driver before its module is loaded
            host.io.write(host.paths.driver_dir("vfio-pci") / "bind", vf)
        assert e.value.errno == errno.ENOENT
        host.io.modprobe("vfio_pci")
        with pytest.raises(OSError) as e:  # vfio-pci matches only through driver_override
            host.io.write(host.paths.driver_dir("vfio-pci") / "bind", vf)
        assert e.value.errno in (errno.ENODEV, errno.EBUSY)
        host.io.write(host.paths.driver_dir("iavf") / "unbind", vf)
        assert not (vf_dev / "driver").exists() and not (vf_dev / "net").exists()
        host.io.write(vf_dev / "driver_override", "vfio-pci")
        host.io.write(host.paths.driver_dir("vfio-pci") / "bind", vf)
        assert link_basename(vf_dev / "driver") == "vfio-pci"
        assert (host.paths.driver_dir("vfio-pci") / vf).is_symlink()
        with pytest.raises(OSError) as e:
            host.io.write(host.paths.driver_dir("iavf") / "unbind", vf)
        assert e.value.errno == errno.ENODEV


# --- failures: typed errors naming the PF and the step ---------------------------------------------
def test_numvfs_above_totalvfs_is_rejected_before_touching_the_pf(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["82576:1"]) as (_sim, host):
        pf0 = host.discover()[0]
        with pytest.raises(ApplyError) as e:
            applier(host).apply([spec(pf0, 8)])
    assert (e.value.pf, e.value.step, e.value.errno) == (pf0["pciAddress"], S.CHECK_TOTALVFS, errno.ERANGE)
    assert str(e.value) == f"pf {pf0['pciAddress']}: step check-totalvfs: numVfs 8 is above sriov_totalvfs 7 (ERANGE)"


def test_enomem_on_numvfs_asks_for_pci_realloc(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (sim, host):
        pf0 = host.discover()[0]
        sim.fault(pf0["pciAddress"], enomem=True)
        with pytest.raises(ApplyError) as e:
            applier(host).apply([spec(pf0, 4)])
        assert (e.value.step, e.value.errno) == (S.WRITE_NUMVFS, errno.ENOMEM)
        assert PCI_REALLOC in str(e.value)
        assert host.kargs.missing(needs_vfio=False) == [PCI_REALLOC]
        # Survives a daemon restart: a fresh Host over the same root still wants it.
        again = Host(sim.root, kernel=sim.access)
        try:
            assert again.kargs.missing(needs_vfio=False) == [PCI_REALLOC]
        finally:
            again.close()


def test_slow_vf_appearance_is_waited_for(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (sim, host):
        pf0 = host.discover()[0]
        sim.fault(pf0["pciAddress"], vf_delay=0.3)
        applier(host).apply([spec(pf0, 4, groups=[netdev_group("0-3")])])
        assert [v["driver"] for v in pf_status(host, pf0["pciAddress"])["Vfs"]] == ["iavf"] * 4


def test_slow_vfs_are_looked_for_soon_then_less_often(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wait for new VFs starts at 50 ms and doubles up to vf_poll_interval: VFs that take 0.3 s are
    seen a fraction of a second late, not up to a whole interval (1 s here) late."""
    import sriovop.host.apply as apply_mod

    slept: list[float] = []
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(apply_mod.time, "sleep", sleep)
    with sim_host(tmp_path, ["xxv710:1"]) as (sim, host):
        pf0 = host.discover()[0]
        sim.fault(pf0["pciAddress"], vf_delay=0.3)
        options = dataclasses.replace(FAST, vf_poll_interval=1.0)
        applier(host, options=options).apply([spec(pf0, 4, groups=[netdev_group("0-3")])])
        assert len(pf_status(host, pf0["pciAddress"])["Vfs"]) == 4
    polls = [s for s in slept if s in (0.05, 0.1, 0.2, 0.4, 0.8, 1.0)]
    assert polls[:3] == [0.05, 0.1, 0.2]
    assert max(polls) <= 1.0


def test_vfs_that_never_appear_time_out_and_the_pf_is_reset(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (sim, host):
        pf0 = host.discover()[0]
        sim.fault(pf0["pciAddress"], vf_delay=30)
        t0 = time.monotonic()
        with pytest.raises(ApplyError) as e:
            applier(host).apply([spec(pf0, 4)])
        assert e.value.step == S.WAIT_VFS and "0 of 4 VFs appeared" in e.value.reason
        assert time.monotonic() - t0 < 25  # the configured wait ended it, not the fault's delay
        assert read_str(host.paths.device(pf0["pciAddress"]) / "sriov_numvfs") == "0"


def test_driver_refusing_to_bind_fails_bind_step_and_resets_pf(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["e810:1"]) as (sim, host):
        pf0 = host.discover()[0]
        pci = pf0["pciAddress"]
        sim.fault(pci, refuse_bind=["vfio-pci"])
        with pytest.raises(ApplyError) as e:
            applier(host).apply([spec(pf0, 2, groups=[vfio_group("0-1")])])
        assert (e.value.pf, e.value.step) == (pci, S.BIND_DRIVER)
        assert "vfio-pci" in e.value.reason
        assert read_str(host.paths.device(pci) / "sriov_numvfs") == "0"  # no half-configured VFs left
        assert not host.paths.pci_record(pci).exists()


def test_garbage_totalvfs_is_a_clear_error(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (sim, host):
        pf0 = host.discover()[0]
        sim.fault(pf0["pciAddress"], garbage_totalvfs="\x07oops")
        status = host.discover()
        assert status[0]["pciAddress"] == pf0["pciAddress"] and "totalvfs" not in status[0]
        with pytest.raises(ApplyError) as e:
            applier(host).apply([spec(pf0, 2)], status)
    assert (e.value.pf, e.value.step) == (pf0["pciAddress"], S.CHECK_TOTALVFS)
    assert "sriov_totalvfs is not an integer" in str(e.value)


def test_missing_pf_driver_link_fails_numvfs_write(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["cx6dx:1"]) as (sim, host):
        pf0 = host.discover()[0]
        sim.fault(pf0["pciAddress"], drop_pf_driver=True)
        status = host.discover()
        assert "driver" not in status[0]
        with pytest.raises(ApplyError) as e:
            applier(host).apply([spec(pf0, 2)], status)
    assert (e.value.step, e.value.errno) == (S.WRITE_NUMVFS, errno.ENOENT)
    assert "no driver bound" in str(e.value)


def test_pf_vanishing_mid_apply(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:2"]) as (sim, host):
        pf0, pf1 = host.discover()
        sim.fault(pf0["pciAddress"], vanish_after_numvfs=True)
        with pytest.raises(ApplyError) as e:
            applier(host).apply([spec(pf0, 4), spec(pf1, 2)])
        assert (e.value.pf, e.value.step, e.value.errno) == (pf0["pciAddress"], S.WAIT_VFS, errno.ENODEV)
        assert "disappeared" in e.value.reason
        # The host now has one PF; applying the same spec names the missing one.
        assert [i["pciAddress"] for i in host.discover()] == [pf1["pciAddress"]]
        assert pf0["name"] not in host.netlink.links()
        with pytest.raises(ApplyError) as again:
            applier(host).apply([spec(pf0, 4), spec(pf1, 2)])
        assert (again.value.pf, again.value.step) == (pf0["pciAddress"], S.FIND_PF)


def test_write_timeout_is_enforced(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["82576:1"]) as (sim, host):
        pf0 = host.discover()[0]
        sim.fault(pf0["pciAddress"], numvfs_write_delay=6)
        options = FAST.__class__(**{**FAST.__dict__, "write_timeout": 1.0})
        with pytest.raises(ApplyError) as e:
            applier(host, options=options).apply([spec(pf0, 2)])
    assert e.value.step == S.WRITE_NUMVFS and e.value.errno == errno.ETIMEDOUT


def test_reboot_resets_kernel_state_keeps_operator_state(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["e810:1"]) as (sim, host):
        pf0 = host.discover()[0]
        applier(host).apply([spec(pf0, 2, groups=[vfio_group("0-1")])])
        host.close()
        assert host.kargs.missing(needs_vfio=True) == ["intel_iommu=on", "iommu=pt"]
        sim.reboot(add_kernel_args=["intel_iommu=on", "iommu=pt"])
        after = Host(sim.root, kernel=sim.access)
        try:
            st = after.discover()[0]
            assert "numVfs" not in st and st["linkAdminState"] == "down"
            assert after.records.exists(pf0["pciAddress"])  # the daemon knows it configured this PF
            assert after.kargs.missing(needs_vfio=True) == []
            applier(after).apply([spec(pf0, 2, groups=[vfio_group("0-1")])])
            assert [v["driver"] for v in pf_status(after, pf0["pciAddress"])["Vfs"]] == ["vfio-pci"] * 2
        finally:
            after.close()


def test_simulated_root_without_running_simulator_is_refused(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["82576:1"]) as (sim, _host):
        pass
    from sriovop.host import DiscoveryError

    with pytest.raises(DiscoveryError, match="simulator is not running"):
        Host(sim.root, kernel=sim.access)


@pytest.mark.parametrize("parallel", [False, True])
def test_sequential_stops_at_first_failure_parallel_reports_all(tmp_path: Path, parallel: bool) -> None:
    with sim_host(tmp_path, ["xxv710", "e810:1"]) as (sim, host):
        a, b, c = host.discover()
        sim.fault(a["pciAddress"], refuse_bind=["vfio-pci"])
        sim.fault(c["pciAddress"], enomem=True)
        options = FAST.__class__(**{**FAST.__dict__, "parallel": parallel})
        wanted = [spec(a, 2, groups=[vfio_group("0-1")]), spec(b, 2, groups=[netdev_group("0-1")]), spec(c, 2)]
        with pytest.raises(HostError) as e:
            applier(host, options=options).apply(wanted)
        configured_b = pf_status(host, b["pciAddress"]).get("numVfs", 0)
    if parallel:
        assert isinstance(e.value, ApplyErrors)
        assert sorted((x.pf, x.step) for x in e.value.errors) == [
            (a["pciAddress"], S.BIND_DRIVER), (c["pciAddress"], S.WRITE_NUMVFS)]
        assert configured_b == 2
    else:
        assert isinstance(e.value, ApplyError) and e.value.pf == a["pciAddress"]
        assert configured_b == 0


@pytest.mark.parametrize("parallel", [False, True])
def test_parallel_nic_config_configures_pfs_at_the_same_time(tmp_path: Path, parallel: bool) -> None:
    """Simulated SR-IOV host: with parallelNicConfig a PF starts before another one's slow numvfs
    write finished; without it, each PF's steps run after the previous PF's last step."""
    events: list[tuple[str, str]] = []
    with sim_host(tmp_path, ["xxv710"]) as (sim, host):
        a, b = host.discover()
        for pf in (a, b):
            sim.fault(pf["pciAddress"], numvfs_write_delay=1.0)
        options = FAST.__class__(**{**FAST.__dict__, "parallel": parallel})
        result = applier(host, options=options, hook=lambda step, pf: events.append((step, pf))).apply(
            [spec(a, 2), spec(b, 2)])
        assert sorted(result.configured) == sorted([a["pciAddress"], b["pciAddress"]])
        assert all(pf_status(host, p["pciAddress"])["numVfs"] == 2 for p in (a, b))
    order = [pf for _step, pf in events]
    first_b, last_a = order.index(b["pciAddress"]), len(order) - 1 - order[::-1].index(a["pciAddress"])
    first_a, last_b = order.index(a["pciAddress"]), len(order) - 1 - order[::-1].index(b["pciAddress"])
    interleaved = first_b < last_a and first_a < last_b
    assert interleaved is parallel, order


def test_externally_managed_pf_is_checked_not_created(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (_sim, host):
        pf0 = host.discover()[0]
        pci = pf0["pciAddress"]
        ap = applier(host)
        external = spec(pf0, 4, groups=[netdev_group("0-3")]) | {"externallyManaged": True}
        with pytest.raises(ApplyError) as e:
            ap.apply([external])
        assert (e.value.pf, e.value.step) == (pci, S.CHECK_EXTERNAL)
        assert "has 0 VFs, the spec asks for 4" in e.value.reason
        host.io.write(host.paths.device(pci) / "sriov_numvfs", "6")  # the admin created them
        seen: list[str] = []
        applier(host, hook=lambda step, _pf: seen.append(step)).apply([external])
        assert S.WRITE_NUMVFS not in seen and S.CLEAR_NUMVFS not in seen
        st = pf_status(host, pci)
        assert st["numVfs"] == 6 and st["externallyManaged"] is True
        # Leaving the spec: the operator forgets the PF but leaves the admin's VFs alone.
        assert ap.apply([]).reset == []
        st = pf_status(host, pci)
        assert st["numVfs"] == 6 and "externallyManaged" not in st


def test_vf_left_without_driver_link_fails_bind_step(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (sim, host):
        pf0 = host.discover()[0]
        pci = pf0["pciAddress"]
        sim.fault(pci, refuse_bind=["iavf"])  # VFs appear without a driver link and probing fails
        with pytest.raises(ApplyError) as e:
            applier(host).apply([spec(pf0, 2, groups=[netdev_group("0-1")])])
        assert (e.value.pf, e.value.step, e.value.errno) == (pci, S.BIND_DRIVER, errno.ENODEV)
        assert "no driver bound to VF" in e.value.reason
        assert read_str(host.paths.device(pci) / "sriov_numvfs") == "0"
