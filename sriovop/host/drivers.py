"""PCI driver (re)binding through sysfs, the way upstream does it.

Default driver: clear `driver_override` and ask the kernel to probe (`drivers_probe`), so the kernel
chooses by device id. Specific driver (vfio-pci): unbind, set `driver_override`, `bind`, clear the
override (leaving it set would pin the device to vfio-pci across later rebinds).
"""

from __future__ import annotations

import errno as errno_mod

from sriovop.host.kernelio import KernelIO
from sriovop.host.paths import HostPaths
from sriovop.host.plan import DPDK_DRIVERS
from sriovop.host.sysfs import link_basename

WRITE_TIMEOUT = 120.0


class Drivers:
    def __init__(self, paths: HostPaths, io: KernelIO, timeout: float = WRITE_TIMEOUT) -> None:
        self.paths = paths
        self.io = io
        self.timeout = timeout

    def current(self, pci: str) -> str:
        return link_basename(self.paths.device(pci) / "driver") or ""

    def unbind(self, pci: str) -> None:
        driver = self.current(pci)
        if not driver:
            return
        self.io.write(self.paths.driver_dir(driver) / "unbind", pci, timeout=self.timeout)

    def _override(self, pci: str, value: str) -> None:
        path = self.paths.device(pci) / "driver_override"
        if not path.exists():
            return  # tolerated, as upstream: old kernels have no override
        self.io.write(path, value, timeout=self.timeout)

    def bind_default(self, pci: str) -> str:
        """Returns the driver the kernel picked; raises OSError(ENODEV) when none bound."""
        if self.current(pci) in DPDK_DRIVERS:
            self.unbind(pci)
        if self.current(pci):
            return self.current(pci)
        self._override(pci, "\x00")
        self.io.write(self.paths.drivers_probe, pci, timeout=self.timeout)
        driver = self.current(pci)
        if not driver:
            raise OSError(errno_mod.ENODEV, f"no driver bound to VF {pci} after drivers_probe")
        return driver

    def bind(self, pci: str, driver: str) -> None:
        if self.current(pci) == driver:
            return
        self.unbind(pci)
        self._override(pci, driver)
        try:
            self.io.write(self.paths.driver_dir(driver) / "bind", pci, timeout=self.timeout)
        except OSError as e:
            hint = ""
            if not (self.paths.device(pci) / "iommu_group").exists():
                hint = " (no iommu_group: enable the IOMMU with intel_iommu=on iommu=pt)"
            raise OSError(e.errno, f"binding VF {pci} to {driver}: {e.strerror or e}{hint}") from e
        finally:
            try:
                self._override(pci, "\x00")
            except OSError:
                pass
        if self.current(pci) != driver:
            raise OSError(errno_mod.ENODEV, f"VF {pci} is not bound to {driver} after bind")
