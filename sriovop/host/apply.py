"""Applying NodeState spec interfaces to a host, step by named step, in upstream's order.

Per PF: check totalvfs → write sriov_numvfs 0, then N → wait for the VFs → raise the PF MTU →
per VF (bind the default driver if driverless → in a group: pin the admin MAC, bind the group's driver,
VF MTU) → PF link up → record file. A PF that fails is reset (numVfs 0) before the error is raised,
so a failed apply never leaves half-configured VFs behind; PFs that left the spec are reset too.
"""

from __future__ import annotations

import errno as errno_mod
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import structlog
import tenacity

from sriovop.host import steps as S
from sriovop.host.drivers import Drivers
from sriovop.host.errors import ApplyError, ApplyErrors
from sriovop.host.host import Host
from sriovop.host.ib_guids import GuidPool, vf_guid
from sriovop.host.kargs import PCI_REALLOC
from sriovop.host.modules import Modules, modules_for_pf
from sriovop.host.plan import DPDK_DRIVERS, NETDEVICE, Plan, group_for, make_plan, resulting_pf_mtu
from sriovop.host.steps import StepHook, noop_hook
from sriovop.host.switchdev import LEGACY, SWITCHDEV, mode_of
from sriovop.host.sysfs import link_basename, listdir, read_int, read_str
from sriovop.host.udev import UdevRules

log = structlog.get_logger("sriovop.host.apply")
T = TypeVar("T")
#: The first wait between two looks for a PF's new VFs (ApplyOptions.vf_poll_interval is the longest).
FIRST_VF_POLL = 0.05


@dataclass
class ApplyOptions:
    write_timeout: float = 120.0
    vf_wait_timeout: float = 120.0
    vf_poll_interval: float = 1.0
    netdev_wait_timeout: float = 10.0
    mtu_attempts: int = 10
    mtu_retry_wait: float = 1.0
    default_mtu: int = 1500
    #: Configure PFs concurrently (the parallelNicConfig feature gate).
    parallel: bool = False
    #: Create/update/remove the OVS bridges of spec.bridges (manageSoftwareBridges, --manage-software-bridges).
    manage_software_bridges: bool = False
    #: OVSDB socket (`unix:<path>`); empty means `<host root>/var/run/openvswitch/db.sock`.
    ovsdb_socket: str = ""
    #: Systemd mode's pre phase (before NetworkManager): PFs and VFs are created, VFs left unbound; the
    #: post phase configures them.
    skip_vf_configuration: bool = False


@dataclass
class ApplyResult:
    configured: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    reset: list[str] = field(default_factory=list)


class Applier:
    def __init__(self, host: Host, *, hook: StepHook | None = None, options: ApplyOptions | None = None) -> None:
        self.host = host
        self.hook = hook or noop_hook
        self.options = options or ApplyOptions()
        self.drivers = Drivers(host.paths, host.io, self.options.write_timeout)
        self._guids: tuple[GuidPool | None] | None = None
        self.udev = UdevRules(host.paths, host.discovery_options.supported)
        self.switchdev = host.switchdev
        #: Called with a PF address before its eSwitch mode changes (detach it from a managed bridge).
        self.before_mode_change: Callable[[str], None] | None = None
        self.modules = Modules(host.paths, host.io)

    # --- entry points -------------------------------------------------------------------------
    def apply(
        self, spec_interfaces: list[dict[str, Any]], status_interfaces: list[dict[str, Any]] | None = None
    ) -> ApplyResult:
        """Make the host match `spec_interfaces`; raise ApplyError for the first failing PF."""
        status = status_interfaces if status_interfaces is not None else self.host.discover()
        plan = make_plan(spec_interfaces, status)
        return self.apply_plan(plan)

    def apply_plan(self, plan: Plan) -> ApplyResult:
        result = ApplyResult()
        if plan.missing:
            errs = [ApplyError(s["pciAddress"], S.FIND_PF, "PF is not present on the host (or not a supported "
                                                           "SR-IOV NIC)") for s in plan.missing]
            raise errs[0] if len(errs) == 1 else ApplyErrors(errs)
        if self.options.parallel and len(plan.configure) > 1:
            self._configure_parallel(plan, result)
        else:
            # Sequential (upstream's default): stop at the first failing PF.
            for spec, status in plan.configure:
                self.configure_pf(spec, status)
                result.configured.append(spec["pciAddress"])
        switchdev = [spec["pciAddress"] for spec, _ in plan.configure if mode_of(spec) == SWITCHDEV]
        if switchdev:
            # The 20-switchdev rules rename representors created before the rules existed.
            self._step(S.RELOAD_UDEV, switchdev[0], self.host.eswitch.reload_udev)
        for spec, _status in plan.unchanged:
            self.host.records.save(spec["pciAddress"], spec)
            result.unchanged.append(spec["pciAddress"])
        for status in plan.reset:
            if self.reset_pf(status):
                result.reset.append(status["pciAddress"])
        return result

    def _configure_parallel(self, plan: Plan, result: ApplyResult) -> None:
        """parallelNicConfig: every PF at once; all failures are reported together."""
        errors: list[ApplyError] = []
        with ThreadPoolExecutor(max_workers=min(8, len(plan.configure)), thread_name_prefix="pf-apply") as pool:
            futures = {pool.submit(self.configure_pf, spec, status): spec["pciAddress"]
                       for spec, status in plan.configure}
            for future, pf in futures.items():
                try:
                    future.result()
                    result.configured.append(pf)
                except ApplyError as e:
                    errors.append(e)
        if errors:
            raise errors[0] if len(errors) == 1 else ApplyErrors(errors)

    # --- one PF -------------------------------------------------------------------------------
    def _step(self, step: str, pf: str, fn: Callable[[], T]) -> T:
        self.hook(step, pf)
        try:
            return fn()
        except ApplyError:
            raise
        except (OSError, ValueError) as e:
            errno = getattr(e, "errno", None)
            raise ApplyError(pf, step, _reason(e), errno=errno) from e

    def configure_pf(self, spec: dict[str, Any], status: dict[str, Any]) -> None:
        pf = spec["pciAddress"]
        log.info("configuring pf", pf=pf, numVfs=spec.get("numVfs", 0), mtu=spec.get("mtu", 0))
        if spec.get("externallyManaged"):
            if self.options.skip_vf_configuration:
                return  # pre phase: runs before the administrator's own network set-up created the VFs
            self._step(S.CHECK_EXTERNAL, pf, lambda: self._check_external(spec, status))
            self._load_modules(spec)
            self._configure_vfs(spec, status)
            self.host.records.save(pf, spec)
            return
        try:
            self._configure_owned(spec, status)
        except ApplyError as err:
            log.warning("apply failed, resetting pf", pf=pf, step=err.step, error=err.reason)
            try:
                self._reset_numvfs(pf)
            except Exception as reset_err:  # the original error is the one to report
                log.warning("reset after failure failed", pf=pf, error=str(reset_err))
            raise

    def _configure_owned(self, spec: dict[str, Any], status: dict[str, Any]) -> None:
        pf = spec["pciAddress"]
        want = int(spec.get("numVfs") or 0)
        target = mode_of(spec)
        name = status.get("name", "")
        self._step(S.CHECK_TOTALVFS, pf, lambda: self._check_totalvfs(pf, want))
        self._load_modules(spec)
        if target == SWITCHDEV:
            # Upstream's configureHWOptionsForSwitchdev, before any VF exists.
            self._step(S.ENABLE_TC_OFFLOAD, pf, lambda: self._pf_tc_offload(name))
            self._step(S.SET_FLOW_STEERING, pf, lambda: self.switchdev.flow_steering(
                pf, partial(self._unbind_all_vfs, pf), partial(self._write_numvfs, pf)))
        self._step(S.WRITE_UDEV_RULE, pf, lambda: self._write_udev_rules(pf, name, target))
        self._set_mode_and_numvfs(pf, target, want, lambda step, fn: self._step(step, pf, fn))
        if target == SWITCHDEV and name:
            self._step(S.WRITE_UDEV_RULE, pf, lambda: self.switchdev.write_representor_rule(pf, name))
        spec_mtu = int(spec.get("mtu") or 0)
        if name and spec_mtu:
            self._step(S.SET_PF_MTU, pf, lambda: self._raise_pf_mtu(name, spec_mtu))
        if self.options.skip_vf_configuration:
            self._step(S.UNBIND_VFS, pf, lambda: self._unbind_all_vfs(pf))
            self._step(S.WRITE_RECORD, pf, lambda: self.host.records.save(pf, spec))
            return
        self._configure_vfs(spec, status)
        if name:
            self._step(S.LINK_UP, pf, lambda: self._link_up(name))
        self._step(S.WRITE_RECORD, pf, lambda: self.host.records.save(pf, spec))

    def _pf_tc_offload(self, name: str) -> None:
        if not name:
            raise OSError(errno_mod.ENODEV, "PF has no netdev to enable hw-tc-offload on")
        self.switchdev.enable_tc_offload(name)

    def _write_udev_rules(self, pf: str, name: str, target: str) -> None:
        """Remove every rule of the PF, then add what the target mode needs (upstream order), so a PF
        going back to legacy keeps no switchdev rule."""
        self.switchdev.remove_rules(pf)
        self.udev.write_nm_disable(pf)
        if target == SWITCHDEV and name:
            self.switchdev.write_pf_name_rule(pf, name)

    def _set_mode_and_numvfs(self, pf: str, target: str, want: int, run: Callable[..., Any]) -> None:
        """Upstream's setEswitchModeAndNumVFs: ice changes the mode with 0 VFs; mlx5 and every other
        driver go to legacy (VFs unbound) before sriov_numvfs is written, and to switchdev (VFs unbound
        again) after the VFs exist. `run(step, fn)` runs one named step."""
        dev = self.host.paths.device(pf)
        current = read_int(dev / "sriov_numvfs") or 0
        mode = self.host.eswitch.eswitch_mode(pf)
        if current == want and mode == target:
            run(S.WAIT_VFS, lambda: self._wait_vfs(pf, want))
            return
        eswitch = self.host.eswitch
        if link_basename(dev / "driver") == "ice":
            if mode != target:
                run(S.CLEAR_NUMVFS, lambda: self._write_numvfs(pf, 0))
                run(S.SET_ESWITCH_MODE, lambda: eswitch.set_eswitch_mode(pf, target))
            run(S.CLEAR_NUMVFS, lambda: self._write_numvfs(pf, 0))
            if want > 0:
                run(S.WRITE_NUMVFS, lambda: self._write_numvfs(pf, want))
            run(S.WAIT_VFS, lambda: self._wait_vfs(pf, want))
            return
        if mode != LEGACY:
            if self.before_mode_change is not None:
                hook = self.before_mode_change
                run(S.DETACH_OVS_UPLINK, lambda: hook(pf))
            run(S.UNBIND_VFS, lambda: self._unbind_all_vfs(pf))
            run(S.SET_ESWITCH_MODE, lambda: eswitch.set_eswitch_mode(pf, LEGACY))
        run(S.CLEAR_NUMVFS, lambda: self._write_numvfs(pf, 0))
        if want > 0:
            run(S.WRITE_NUMVFS, lambda: self._write_numvfs(pf, want))
        run(S.WAIT_VFS, lambda: self._wait_vfs(pf, want))
        if target == SWITCHDEV:
            run(S.UNBIND_VFS, lambda: self._unbind_all_vfs(pf))
            run(S.SET_ESWITCH_MODE, lambda: eswitch.set_eswitch_mode(pf, SWITCHDEV))

    def _unbind_all_vfs(self, pf: str) -> None:
        for _index, vf in sorted(self._virtfns(pf).items()):
            self.drivers.unbind(vf)

    def _load_modules(self, spec: dict[str, Any]) -> None:
        """Before any VF is bound: the drivers its groups need must exist (vfio_pci, vDPA buses)."""
        needed = modules_for_pf(spec)
        if needed:
            self._step(S.LOAD_MODULES, spec["pciAddress"], lambda: self.modules.load_all(needed))

    def _check_external(self, spec: dict[str, Any], status: dict[str, Any]) -> None:
        pf = spec["pciAddress"]
        have = read_int(self.host.paths.device(pf) / "sriov_numvfs") or 0
        if have < int(spec.get("numVfs") or 0):
            raise ValueError(f"externally managed PF has {have} VFs, the spec asks for {spec.get('numVfs')}")
        if (spec.get("eSwitchMode") or "legacy") != (status.get("eSwitchMode") or "legacy"):
            raise ValueError("externally managed PF has a different eSwitch mode than the spec")
        if int(spec.get("mtu") or 0) > int(status.get("mtu") or 0):
            raise ValueError(f"externally managed PF MTU {status.get('mtu')} is below the spec's {spec.get('mtu')}")

    def _check_totalvfs(self, pf: str, want: int) -> None:
        dev = self.host.paths.device(pf)
        if not dev.exists():
            raise OSError(errno_mod.ENODEV, "PF is no longer present under /sys/bus/pci/devices")
        raw = read_str(dev / "sriov_totalvfs")
        if raw is None:
            raise OSError(errno_mod.ENOENT, "PF has no sriov_totalvfs (not an SR-IOV PF)")
        try:
            total = int(raw)
        except ValueError:
            raise ValueError(f"sriov_totalvfs is not an integer: {raw[:40]!r}") from None
        if want > total:
            raise OSError(errno_mod.ERANGE, f"numVfs {want} is above sriov_totalvfs {total}")

    def _write_numvfs(self, pf: str, n: int) -> None:
        path = self.host.paths.device(pf) / "sriov_numvfs"
        if n == 0 and (not path.exists() or read_str(path) == "0"):
            return  # the kernel treats 0 → 0 as a no-op; skipping it saves a write per PF
        if not path.parent.exists():
            raise OSError(errno_mod.ENODEV, "PF is no longer present under /sys/bus/pci/devices")
        try:
            self.host.io.write(path, str(n), timeout=self.options.write_timeout)
        except OSError as e:
            if e.errno == errno_mod.ENOMEM:
                # The kernel could not fit the VF BARs: the next boot needs pci=realloc.
                self.host.kargs.record(PCI_REALLOC)
                raise OSError(e.errno, f"writing sriov_numvfs={n}: out of memory; kernel argument "
                                       f"{PCI_REALLOC} is needed (reboot)") from e
            raise OSError(e.errno, f"writing sriov_numvfs={n}: {e.strerror or e}") from e

    def _virtfns(self, pf: str) -> dict[int, str]:
        dev = self.host.paths.device(pf)
        out = {}
        for entry in listdir(dev):
            if entry.startswith("virtfn"):
                addr = link_basename(dev / entry)
                if addr:
                    out[int(entry[6:])] = addr
        return out

    def _wait_vfs(self, pf: str, want: int) -> None:
        """Until the PF's `want` VFs exist. Polled from FIRST_VF_POLL doubling up to vf_poll_interval: a
        NIC that takes seconds is seen within a fraction of its time, not up to a whole interval late
        (at 1 s flat, 2.5 s of VF creation cost 3 s, on every node of every drain wave)."""
        deadline = time.monotonic() + self.options.vf_wait_timeout
        dev = self.host.paths.device(pf)
        interval = min(FIRST_VF_POLL, self.options.vf_poll_interval)
        while True:
            if not dev.exists():
                raise OSError(errno_mod.ENODEV, "PF disappeared while waiting for its VFs")
            vfs = self._virtfns(pf)
            ready = [a for a in vfs.values() if (self.host.paths.device(a) / "physfn").is_symlink()]
            if len(vfs) == want and len(ready) == want:
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(errno_mod.ETIMEDOUT, f"{len(ready)} of {want} VFs appeared within "
                                                        f"{self.options.vf_wait_timeout:g}s")
            time.sleep(interval)
            interval = min(interval * 2, self.options.vf_poll_interval)

    def _retry(self, fn: Callable[[], None]) -> None:
        tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.options.mtu_attempts),
            wait=tenacity.wait_fixed(self.options.mtu_retry_wait),
            retry=tenacity.retry_if_exception_type(OSError),
            reraise=True,
        )(fn)

    def _raise_pf_mtu(self, name: str, mtu: int) -> None:
        info = self.host.netlink.link(name)
        if info is None:
            raise OSError(errno_mod.ENODEV, f"PF netdev {name} not found")
        if resulting_pf_mtu(mtu, info.mtu) != info.mtu:
            self._retry(lambda: self.host.netlink.set_mtu(name, mtu))

    def _link_up(self, name: str) -> None:
        info = self.host.netlink.link(name)
        if info is None:
            raise OSError(errno_mod.ENODEV, f"PF netdev {name} not found")
        if not info.admin_up:
            self.host.netlink.set_up(name)

    # --- VFs ----------------------------------------------------------------------------------
    def _configure_vfs(self, spec: dict[str, Any], status: dict[str, Any]) -> None:
        pf = spec["pciAddress"]
        pf_name = status.get("name", "")
        switchdev = mode_of(spec) == SWITCHDEV
        links = self.host.netlink.links()
        for index, vf in sorted(self._virtfns(pf).items()):
            if not self.host.paths.device(pf).exists():
                raise ApplyError(pf, S.BIND_DRIVER, "PF disappeared while configuring its VFs",
                                 errno=errno_mod.ENODEV)
            if not self.drivers.current(vf):
                self._step(S.BIND_DRIVER, pf, partial(self.drivers.bind_default, vf))
            group = group_for(spec, index)
            if group is None:
                continue
            device_type = group.get("deviceType") or NETDEVICE
            driver = self.drivers.current(vf)
            if driver and driver not in DPDK_DRIVERS and (spec.get("linkType") or "eth").lower() == "ib":
                if pf_name:  # upstream: node and port GUID on the PF, then unbind so the rebind uses them
                    self._step(S.SET_VF_GUID, pf, partial(self._set_vf_guid, pf_name, pf, index, vf))
            elif driver and driver not in DPDK_DRIVERS:
                netdev = self._step(S.WAIT_VF_NETDEV, pf, partial(self._wait_vf_netdev, vf))
                mac = self._vf_mac(vf, netdev, links)
                if pf_name and mac:
                    self._step(S.SET_VF_MAC, pf, partial(self.host.io.set_vf_mac, pf_name, pf, index, mac))
            vdpa_type = group.get("vdpaType") or ""
            if switchdev and not vdpa_type:
                self._step(S.DELETE_VDPA, pf, partial(self.switchdev.delete_vdpa, vf))
            if device_type == NETDEVICE:
                if group.get("isRdma") and self.drivers.current(vf):
                    # As upstream: rebind, so the VF's RDMA device is created again with its MAC set and
                    # in the current RDMA netns mode.
                    self._step(S.BIND_DRIVER, pf, partial(self.drivers.unbind, vf))
                self._step(S.BIND_DRIVER, pf, partial(self.drivers.bind_default, vf))
                mtu = int(group.get("mtu") or 0)
                if mtu > 0:
                    self._step(S.SET_VF_MTU, pf, partial(self._set_vf_mtu, vf, mtu, links))
                if switchdev:
                    self._step(S.ENABLE_TC_OFFLOAD, pf, partial(self._vf_tc_offload, vf))
                    if vdpa_type:
                        self._step(S.CREATE_VDPA, pf, partial(self.switchdev.create_vdpa, vf, vdpa_type))
            else:
                self._step(S.BIND_DRIVER, pf, partial(self.drivers.bind, vf, device_type))

    def _set_vf_guid(self, pf_name: str, pf: str, index: int, vf: str) -> None:
        if self._guids is None:  # read once per apply: the pool file, or random GUIDs without one
            by_guid = {str(i.get("mac") or "").lower(): str(i["pciAddress"]) for i in self.host.discover()}
            self._guids = (GuidPool.load(self.host.paths.root, by_guid),)
        self.host.io.set_vf_guid(pf_name, pf, index, vf_guid(self._guids[0], pf, index))
        self.drivers.unbind(vf)

    def _vf_tc_offload(self, vf: str) -> None:
        netdev = self.switchdev.vf_netdev(vf)
        if not netdev:
            raise OSError(errno_mod.ENODEV, f"VF {vf} has no netdev to enable hw-tc-offload on")
        self.switchdev.enable_tc_offload(netdev)

    def _wait_vf_netdev(self, vf: str) -> str:
        """Kernel VF drivers create the netdev asynchronously; rebind once if it never shows up."""
        net = self.host.paths.device(vf) / "net"
        for attempt in range(2):
            deadline = time.monotonic() + self.options.netdev_wait_timeout
            while time.monotonic() < deadline:
                names = listdir(net)
                if names:
                    return names[0]
                time.sleep(0.05)
            if attempt == 0:
                self.drivers.unbind(vf)
                self.drivers.bind_default(vf)
        raise OSError(errno_mod.ENODEV, f"VF {vf} has no netdev after {self.options.netdev_wait_timeout:g}s "
                                        "and a rebind")

    def _vf_mac(self, vf: str, netdev: str, links: dict[str, Any]) -> str:
        info = links.get(netdev)
        if info is not None:
            return str(info.mac)
        return read_str(self.host.paths.device(vf) / "net" / netdev / "address") or ""

    def _set_vf_mtu(self, vf: str, mtu: int, links: dict[str, Any]) -> None:
        names = listdir(self.host.paths.device(vf) / "net")
        if not names:
            raise OSError(errno_mod.ENODEV, f"VF {vf} has no netdev to set the MTU on")
        name = names[0]
        if name in links:
            self._retry(lambda: self.host.netlink.set_mtu(name, mtu))
            return
        # The netdev lives outside our namespace: its sysfs `mtu` attribute is writable too.
        path = self.host.paths.device(vf) / "net" / name / "mtu"
        if read_int(path) != mtu:
            self.host.io.write(path, str(mtu), timeout=self.options.write_timeout)

    # --- reset --------------------------------------------------------------------------------
    def _initial_mode(self, pf: str) -> str:
        return mode_of(self.host.checkpoint.interface(pf) or {})

    def _reset_numvfs(self, pf: str) -> None:
        """0 VFs and the eSwitch mode the host had before the operator (upstream's ResetSriovDevice)."""
        initial = self._initial_mode(pf)
        if self.host.eswitch.eswitch_mode(pf) != initial:
            self._set_mode_and_numvfs(pf, initial, 0, lambda _step, fn: fn())
            return
        dev = self.host.paths.device(pf)
        if (read_int(dev / "sriov_numvfs") or 0) > 0:
            self._write_numvfs(pf, 0)

    def reset_pf(self, status: dict[str, Any]) -> bool:
        """Undo what the operator configured on a PF that left the spec. Returns True if it did."""
        pf = status["pciAddress"]
        records = self.host.records
        if not records.exists(pf):
            return False
        if records.externally_managed(pf):
            self._step(S.REMOVE_RECORD, pf, lambda: records.remove(pf))
            return False
        self.udev.remove(pf)
        self.switchdev.remove_rules(pf)
        if int(status.get("numVfs") or 0) > 0 or mode_of(status) != self._initial_mode(pf):
            self._step(S.RESET_NUMVFS, pf, lambda: self._reset_numvfs(pf))
        # Upstream restores the MTU only while VFs exist; checking the MTU itself also finishes a reset
        # that was interrupted between the two steps (the record is only removed last).
        name = status.get("name", "")
        record = records.load(pf) or {}
        if name and record.get("mtu") and (status.get("linkType") or "ETH") == "ETH":
            initial = self.host.checkpoint.interface(pf) or {}
            mtu = int(initial.get("mtu") or self.options.default_mtu)
            if int(status.get("mtu") or 0) != mtu:
                self._step(S.RESTORE_MTU, pf, lambda: self._retry(lambda: self.host.netlink.set_mtu(name, mtu)))
        self._step(S.REMOVE_RECORD, pf, lambda: records.remove(pf))
        return True


def _reason(e: OSError | ValueError) -> str:
    """The message for `lastSyncError`: an OSError's own words and the errno's symbol ("... (ERANGE)"),
    not Python's "[Errno 34] ..." rendering, which a reader of the NodeState would have to look up."""
    if not isinstance(e, OSError) or not e.strerror:
        return str(e)
    reason = str(e.strerror)
    if e.filename:
        reason = f"{reason}: {e.filename}"
    if e.errno:
        reason = f"{reason} ({errno_mod.errorcode.get(e.errno, e.errno)})"
    return reason
