"""The simulated kernel: a sysfs tree under a root plus the semantics of writing to it.

All reads by the host layer are plain file reads of this tree; every write arrives here (through the
simulator's socket) and is answered like the kernel answers it: `sriov_numvfs` creates or removes VF
devices with `virtfn*`/`physfn`/driver links, writing N while VFs exist is EBUSY, above totalvfs is
ERANGE, `bind`/`unbind`/`driver_override`/`drivers_probe` move devices between drivers.

Where the simulator records what the kernel keeps in drivers: a VF's admin MAC and MTU are written to
the VF netdev's sysfs attributes (`<vf>/net/<ifname>/address`, `mtu`) because VF netdevs exist only in
this tree (the PF netdevs are real veths in the simulator's network namespace, and veth has no VFs, so
`IFLA_VF_MAC` cannot go through the kernel). Discovery reads VF MAC/MTU back from those files.
"""

from __future__ import annotations

import errno
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import structlog

from sriovop.sim.devices import DeviceTable, KernelError, SimPf, SimVf
from sriovop.sim.eswitch import SimEswitch
from sriovop.sim.models import NETDEV_DRIVERS
from sriovop.sim.system import SimSystem
from sriovop.sim.tree import FLAGS_UP, PCI_ROOT, mac_for, pci_to_rid, rid_to_pci, symlink, unlink, write

log = structlog.get_logger("sriovop.sim")


class SimKernel:
    """Thread-safe: every operation holds one lock, like the device lock the kernel takes."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        #: Shared with the eSwitch; `pfs` and `vf_owner` are its tables (the same dicts).
        self.devices = DeviceTable(self.root)
        self.pfs = self.devices.pfs
        self.vf_owner = self.devices.vf_owner
        #: IFLA_VF_* attributes per VF PCI address (sim/vfconfig.py); gone with the VF.
        self.vf_configs: dict[str, dict[str, Any]] = {}
        self.lock = threading.RLock()
        #: Called with a PF when it is hot-unplugged (the simulator deletes its veth).
        self.on_vanish: Any = None
        self.eswitch = SimEswitch(self.devices)
        #: Modules, RDMA, boot id (sim/system.py); vfio-pci exists once `vfio_pci` is loaded.
        self.system = SimSystem(self.root, self.ensure_driver)

    # --- tree helpers --------------------------------------------------------------------------
    def dev_dir(self, pci: str) -> Path:
        return self.devices.dev_dir(pci)

    def _link_device(self, pci: str) -> None:
        symlink(f"../../../devices/pci0000:00/{pci}", self.root / "sys/bus/pci/devices" / pci)

    def _driver_dir(self, driver: str) -> Path:
        return self.root / "sys/bus/pci/drivers" / driver

    def ensure_driver(self, driver: str) -> None:
        d = self._driver_dir(driver)
        if not d.exists():
            d.mkdir(parents=True)
            for attr in ("bind", "unbind", "new_id", "remove_id"):
                (d / attr).write_text("")

    def base_tree(self) -> None:
        for rel in ("sys/bus/pci/devices", "sys/bus/pci/drivers", "sys/class/net", PCI_ROOT, "proc",
                    "sys/kernel/iommu_groups"):
            (self.root / rel).mkdir(parents=True, exist_ok=True)
        write(self.root / "sys/bus/pci/drivers_probe", "")
        self.eswitch.base_tree()

    def _common_attrs(self, d: Path, vendor: str, device: str, pci: str) -> None:
        write(d / "class", "0x020000")
        write(d / "vendor", f"0x{vendor}")
        write(d / "device", f"0x{device}")
        write(d / "subsystem_vendor", f"0x{vendor}")
        write(d / "numa_node", "0")
        write(d / "driver_override", "(null)")
        group = pci_to_rid(pci)
        gdir = self.root / "sys/kernel/iommu_groups" / str(group)
        gdir.mkdir(parents=True, exist_ok=True)
        symlink(os.path.relpath(gdir, d), d / "iommu_group")

    # --- building ------------------------------------------------------------------------------
    def add_pf(self, pf: SimPf) -> None:
        with self.lock:
            d = self.dev_dir(pf.pci)
            d.mkdir(parents=True, exist_ok=True)
            self._common_attrs(d, pf.model.vendor, pf.model.pf_device, pf.pci)
            if pf.model.totalvfs > 0:
                write(d / "sriov_totalvfs", str(pf.model.totalvfs))
                write(d / "sriov_numvfs", "0")
                write(d / "sriov_drivers_autoprobe", "1")
                write(d / "sriov_offset", str(pf.model.vf_offset))
                write(d / "sriov_stride", "1")
            net = d / "net" / pf.ifname
            write(net / "speed", str(pf.model.speed))
            write(net / "phys_port_name", f"p{pf.port}")
            write(net / "type", "1")
            symlink(os.path.relpath(net, self.root / "sys/class/net"), self.root / "sys/class/net" / pf.ifname)
            self._link_device(pf.pci)
            self.pfs[pf.pci] = pf
            self._bind(pf.pci, pf.model.pf_driver)

    def vf_pci(self, pf: SimPf, index: int) -> str:
        rid = pci_to_rid(pf.pci) + pf.model.vf_offset + pf.port * pf.model.totalvfs + index
        return rid_to_pci(rid)

    # --- driver binding ------------------------------------------------------------------------
    def _device(self, pci: str) -> tuple[SimPf | None, SimVf | None]:
        return self.devices.device(pci)

    def _current_driver(self, pci: str) -> str:
        pf, vf = self._device(pci)
        if vf is not None:
            return vf.driver
        return pf.driver if pf is not None else ""

    def _default_driver(self, pci: str) -> str:
        pf, vf = self._device(pci)
        if pf is None:
            return ""
        return pf.model.vf_driver if vf is not None else pf.model.pf_driver

    def _matches(self, pci: str, driver: str) -> bool:
        pf, vf = self._device(pci)
        override = (vf.override if vf is not None else pf.override) if pf is not None else ""
        if override:
            return override == driver
        return driver == self._default_driver(pci)

    def _bind(self, pci: str, driver: str) -> None:
        """Attach: driver link, driver's device link, and for netdev drivers on VFs, the netdev."""
        pf, vf = self._device(pci)
        if pf is None:
            raise KernelError(errno.ENODEV, f"no such device {pci}")
        if vf is not None and driver in pf.faults.refuse_bind:
            raise KernelError(errno.EIO, f"{driver}: probe of {pci} failed with error -5")
        self.ensure_driver(driver)
        d = self.dev_dir(pci)
        symlink(f"../../../bus/pci/drivers/{driver}", d / "driver")
        symlink(f"../../../../devices/pci0000:00/{pci}", self._driver_dir(driver) / pci)
        if vf is not None:
            vf.driver = driver
            vf.mtu = 1500  # a fresh netdev starts at the default MTU
            if driver in NETDEV_DRIVERS:
                self._vf_netdev(pf, vf)
        else:
            pf.driver = driver

    def _unbind(self, pci: str) -> None:
        pf, vf = self._device(pci)
        if pf is None:
            return
        driver = self._current_driver(pci)
        if not driver:
            return
        unlink(self.dev_dir(pci) / "driver")
        unlink(self._driver_dir(driver) / pci)
        if vf is not None:
            self.eswitch.on_vf_unbound(pf, vf, self._vf_ifname(pf, vf))
            self._drop_vf_netdev(pf, vf)
            vf.driver = ""
        else:
            pf.driver = ""

    def _vf_ifname(self, pf: SimPf, vf: SimVf) -> str:
        return f"{pf.ifname}v{vf.index}"

    def _vf_netdev(self, pf: SimPf, vf: SimVf) -> None:
        name = self._vf_ifname(pf, vf)
        net = self.dev_dir(vf.pci) / "net" / name
        write(net / "address", vf.admin_mac or mac_for(vf.pci, "0a"))
        write(net / "mtu", str(vf.mtu))
        write(net / "type", "1")
        write(net / "flags", FLAGS_UP)
        write(net / "operstate", "up")
        for counter in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_dropped", "tx_dropped"):
            write(net / "statistics" / counter, "0")
        symlink(os.path.relpath(net, self.root / "sys/class/net"), self.root / "sys/class/net" / name)

    def _drop_vf_netdev(self, pf: SimPf, vf: SimVf) -> None:
        name = self._vf_ifname(pf, vf)
        unlink(self.root / "sys/class/net" / name)
        shutil.rmtree(self.dev_dir(vf.pci) / "net", ignore_errors=True)

    # --- VFs -----------------------------------------------------------------------------------
    def _create_vfs(self, pf: SimPf, n: int) -> None:
        pf_dir = self.dev_dir(pf.pci)
        autoprobe = (pf_dir / "sriov_drivers_autoprobe").read_text().strip() != "0"
        for i in range(n):
            vf = SimVf(pci=self.vf_pci(pf, i), index=i)
            d = self.dev_dir(vf.pci)
            d.mkdir(parents=True, exist_ok=True)
            self._common_attrs(d, pf.model.vendor, pf.model.vf_device, vf.pci)
            symlink(f"../{pf.pci}", d / "physfn")
            symlink(f"../{vf.pci}", pf_dir / f"virtfn{i}")
            self._link_device(vf.pci)
            pf.vfs[i] = vf
            self.vf_owner[vf.pci] = (pf, vf)
            if autoprobe and pf.model.vf_driver not in pf.faults.refuse_bind:
                self._bind(vf.pci, pf.model.vf_driver)
        self.eswitch.on_vfs_created(pf)

    def _remove_vfs(self, pf: SimPf) -> None:
        if pf.timer is not None:
            pf.timer.cancel()
            pf.timer = None
        pf_dir = self.dev_dir(pf.pci)
        for i, vf in sorted(pf.vfs.items()):
            self._unbind(vf.pci)
            self.eswitch.on_vf_removed(pf, vf)
            unlink(pf_dir / f"virtfn{i}")
            unlink(self.root / "sys/bus/pci/devices" / vf.pci)
            shutil.rmtree(self.dev_dir(vf.pci), ignore_errors=True)
            self.vf_owner.pop(vf.pci, None)
            self.vf_configs.pop(vf.pci, None)
        pf.vfs.clear()

    def _vanish(self, pf: SimPf) -> None:
        """Hot-unplug: the PF and its VFs leave sysfs, its netdev leaves the namespace."""
        self._remove_vfs(pf)
        self._unbind(pf.pci)
        unlink(self.root / "sys/bus/pci/devices" / pf.pci)
        unlink(self.root / "sys/class/net" / pf.ifname)
        shutil.rmtree(self.dev_dir(pf.pci), ignore_errors=True)
        self.pfs.pop(pf.pci, None)
        if self.on_vanish is not None:
            self.on_vanish(pf)

    def _set_numvfs(self, pf: SimPf, raw: str) -> None:
        try:
            n = int(raw.strip() or "x", 0)
        except ValueError:
            raise KernelError(errno.EINVAL, f"invalid sriov_numvfs value {raw!r}") from None
        if n < 0:
            raise KernelError(errno.EINVAL, "negative sriov_numvfs")
        if n > pf.model.totalvfs:
            raise KernelError(errno.ERANGE, f"{n} VFs requested; only {pf.model.totalvfs} supported")
        if n == pf.numvfs:
            return
        if not pf.driver:
            raise KernelError(errno.ENOENT, "no driver bound to device; cannot configure SR-IOV")
        path = self.dev_dir(pf.pci) / "sriov_numvfs"
        if n == 0:
            self._remove_vfs(pf)
            pf.numvfs = 0
            write(path, "0")
            return
        if pf.numvfs:
            raise KernelError(errno.EBUSY, f"{pf.numvfs} VFs already enabled. Disable before enabling {n} VFs")
        if pf.faults.enomem:
            raise KernelError(errno.ENOMEM, "not enough MMIO resources for SR-IOV")
        pf.numvfs = n
        write(path, str(n))
        if pf.faults.vf_delay > 0:
            def later() -> None:
                with self.lock:
                    if pf.timer is not None and pf.numvfs == n and pf.pci in self.pfs:
                        pf.timer = None
                        self._create_vfs(pf, n)
            pf.timer = threading.Timer(pf.faults.vf_delay, later)
            pf.timer.daemon = True
            pf.timer.start()
        else:
            self._create_vfs(pf, n)
        if pf.faults.vanish_after_numvfs:
            self._vanish(pf)

    # --- the write entry point -----------------------------------------------------------------
    def write(self, rel: str, data: str) -> None:
        delay = 0.0
        with self.lock:
            delay = self._write(rel, data)
        if delay:
            # A hung write (slow firmware): the caller's write timeout is what ends it.
            threading.Event().wait(delay)

    def _write(self, rel: str, data: str) -> float:
        full = self.root / rel
        if not full.exists() and not full.is_symlink():
            raise KernelError(errno.ENOENT, f"{rel}: no such file or directory")
        real = Path(os.path.realpath(full))
        try:
            parts = real.relative_to(self.root.resolve()).parts
        except ValueError:
            raise KernelError(errno.EACCES, f"{rel} is outside the simulated root") from None
        value = data.strip("\n")
        if parts[:3] == ("sys", "bus", "vdpa"):
            self.eswitch.vdpa_write(parts, value)
            return 0.0
        if parts[:3] == ("sys", "bus", "pci") and parts[3:] == ("drivers_probe",):
            self._probe(value.strip())
            return 0.0
        if parts[:4] == ("sys", "bus", "pci", "drivers") and len(parts) == 6:
            driver, attr = parts[4], parts[5]
            if attr == "bind":
                self._bind_write(driver, value.strip())
                return 0.0
            if attr == "unbind":
                if self._current_driver(value.strip()) != driver:
                    raise KernelError(errno.ENODEV, f"{value.strip()} is not bound to {driver}")
                self._unbind(value.strip())
                return 0.0
        if parts[:3] == tuple(PCI_ROOT.split("/")) and len(parts) >= 5:
            pci, attr = parts[3], parts[4]
            pf, vf = self._device(pci)
            if pf is None:
                raise KernelError(errno.ENODEV, f"no such device {pci}")
            if attr == "sriov_numvfs" and vf is None:
                before = pf.numvfs
                self._set_numvfs(pf, value)
                return pf.faults.numvfs_write_delay if pf.numvfs != before else 0.0
            if attr == "driver_override" and len(parts) == 5:
                name = value.strip("\x00").strip()
                if vf is not None:
                    vf.override = name
                else:
                    pf.override = name
                write(real, name or "(null)")
                return 0.0
            if attr == "net" and len(parts) == 7 and parts[6] == "mtu" and vf is not None:
                self._set_vf_mtu(pf, vf, value)
                return 0.0
        # Any other attribute: stored as written.
        write(real, value)
        return 0.0

    def _probe(self, pci: str) -> None:
        pf, vf = self._device(pci)
        if pf is None:
            raise KernelError(errno.ENODEV, f"no such device {pci}")
        if self._current_driver(pci):
            return
        override = vf.override if vf is not None else pf.override
        driver = override or self._default_driver(pci)
        if override and not self._driver_dir(driver).exists():
            return
        try:
            self._bind(pci, driver)
        except KernelError:
            return  # a failing probe leaves the device unbound; the write itself succeeds

    def _bind_write(self, driver: str, pci: str) -> None:
        pf, _vf = self._device(pci)
        if pf is None or not self._matches(pci, driver):
            raise KernelError(errno.ENODEV, f"{driver} does not match device {pci}")
        if self._current_driver(pci):
            raise KernelError(errno.EBUSY, f"{pci} is already bound to {self._current_driver(pci)}")
        self._bind(pci, driver)

    def _set_vf_mtu(self, pf: SimPf, vf: SimVf, raw: str) -> None:
        try:
            mtu = int(raw.strip())
        except ValueError:
            raise KernelError(errno.EINVAL, f"invalid mtu {raw!r}") from None
        if not 68 <= mtu <= pf.model.max_mtu:
            raise KernelError(errno.EINVAL, f"mtu {mtu} outside 68..{pf.model.max_mtu}")
        vf.mtu = mtu
        write(self.dev_dir(vf.pci) / "net" / self._vf_ifname(pf, vf) / "mtu", str(mtu))

    def _pf_vf(self, pf_pci: str, index: int) -> tuple[SimPf, SimVf]:
        pf = self.pfs.get(pf_pci)
        if pf is None:
            raise KernelError(errno.ENODEV, f"no such PF {pf_pci}")
        vf = pf.vfs.get(index)
        if vf is None:
            raise KernelError(errno.EINVAL, f"PF {pf_pci} has no VF {index}")
        return pf, vf

    def set_vf_mac(self, pf_pci: str, index: int, mac: str) -> None:
        with self.lock:
            pf, vf = self._pf_vf(pf_pci, index)
            parts = mac.split(":")
            if len(parts) != 6 or not all(len(p) == 2 for p in parts):
                raise KernelError(errno.EINVAL, f"invalid MAC {mac!r}")
            vf.admin_mac = mac.lower()
            if vf.driver in NETDEV_DRIVERS:
                write(self.dev_dir(vf.pci) / "net" / self._vf_ifname(pf, vf) / "address", vf.admin_mac)

    def set_vf_guid(self, pf_pci: str, index: int, guid: str) -> None:
        """Like mlx5: the GUID is kept on the PF side and shows in the VF's IB device
        (`<vf>/infiniband/<dev>/node_guid`, kernel format xxxx:xxxx:xxxx:xxxx) once its driver binds."""
        with self.lock:
            _pf, vf = self._pf_vf(pf_pci, index)
            parts = guid.split(":")
            if len(parts) != 8 or not all(len(p) == 2 for p in parts):
                raise KernelError(errno.EINVAL, f"invalid GUID {guid!r}")
            hexed = "".join(parts).lower()
            write(self.dev_dir(vf.pci) / "infiniband" / f"sim_ib{index}" / "node_guid",
                   ":".join(hexed[i:i + 4] for i in range(0, 16, 4)))

    # --- fault injection -----------------------------------------------------------------------
    def fault(self, pf_pci: str, values: dict[str, Any]) -> None:
        with self.lock:
            pf = self.pfs.get(pf_pci)
            if pf is None:
                raise KernelError(errno.ENODEV, f"no such PF {pf_pci}")
            values = dict(values)
            garbage = values.pop("garbage_totalvfs", None)
            if garbage is not None:
                write(self.dev_dir(pf.pci) / "sriov_totalvfs", str(garbage))
            for index, counters in (values.pop("vf_traffic", None) or {}).items():
                # Traffic through a VF: bump its netdev's counters (what the NIC would count).
                vf = pf.vfs.get(int(index))
                net = self.dev_dir(vf.pci) / "net" / self._vf_ifname(pf, vf) / "statistics" if vf else None
                if net is None or not net.is_dir():
                    raise KernelError(errno.ENODEV, f"VF {index} of {pf_pci} has no netdev")
                for counter, delta in counters.items():
                    path = net / counter
                    write(path, str(int(path.read_text()) + int(delta)))
            if values.pop("drop_pf_driver", False):
                self._unbind(pf.pci)
            if values.pop("vanish_now", False):
                self._vanish(pf)
                return
            pf.faults.update(values)
