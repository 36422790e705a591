"""Kernel arguments: which ones the configuration needs, and whether the running kernel has them.

A missing argument means a reboot. The daemon cannot edit a bootloader on a simulated host, and on a
real one the edit is distribution specific (grubby/rpm-ostree), so the host layer only records the
desired set in the state dir (surviving restarts: an ENOMEM seen before a crash still demands
`pci=realloc`) and answers "what is missing from /proc/cmdline"; the daemon decides to reboot.
"""

from __future__ import annotations

import json

from sriovop.host.paths import HostPaths
from sriovop.host.records import atomic_write_json
from sriovop.host.sysfs import read_str

IOMMU_INTEL = ("intel_iommu=on", "iommu=pt")
IOMMU_AMD = ("iommu=pt",)
PCI_REALLOC = "pci=realloc"


class KernelArgs:
    def __init__(self, paths: HostPaths) -> None:
        self.paths = paths

    def current(self) -> set[str]:
        return set((read_str(self.paths.cmdline) or "").split())

    def cpu_vendor(self) -> str:
        for line in (read_str(self.paths.cpuinfo) or "").splitlines():
            if line.startswith("vendor_id"):
                return line.split(":", 1)[1].strip()
        return "GenuineIntel"

    def iommu_args(self) -> tuple[str, ...]:
        return IOMMU_AMD if self.cpu_vendor() == "AuthenticAMD" else IOMMU_INTEL

    def recorded(self) -> set[str]:
        try:
            data = json.loads(self.paths.desired_kargs.read_text())
        except (OSError, ValueError):
            return set()
        return {str(a) for a in data} if isinstance(data, list) else set()

    def record(self, *args: str) -> None:
        """Remember an argument the host needs (e.g. pci=realloc after ENOMEM) across restarts."""
        wanted = self.recorded() | set(args)
        atomic_write_json(self.paths.desired_kargs, sorted(wanted))

    def forget(self, *args: str) -> None:
        wanted = self.recorded() - set(args)
        atomic_write_json(self.paths.desired_kargs, sorted(wanted))

    def desired(self, *, needs_vfio: bool) -> set[str]:
        wanted = set(self.recorded())
        if needs_vfio:
            wanted |= set(self.iommu_args())
        return wanted

    def missing(self, *, needs_vfio: bool) -> list[str]:
        return sorted(self.desired(needs_vfio=needs_vfio) - self.current())
