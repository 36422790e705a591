"""Kernel arguments: which ones the configuration needs, writing them for the next boot, and whether the
running kernel has them.

Wanted (as upstream's generic plugin; decided in decision.py): `intel_iommu=on iommu=pt` (AMD: `iommu=pt`)
while a vfio-pci group exists, `pci=realloc` once an allocation failed (recorded here in the state dir, so
it survives restarts), `ib_core.netns_mode=1|0` for rdmaMode shared|exclusive. `sync` writes them to the
boot configuration (bootconfig.py) and removes the ones this daemon added that are no longer wanted;
arguments it did not add (an administrator's, or present before) are never removed. A missing argument
means a reboot; a removal waits for the next one.
"""

from __future__ import annotations

import json
from pathlib import Path

from sriovop.host.bootconfig import BootConfig
from sriovop.host.paths import HostPaths
from sriovop.host.records import atomic_write_json
from sriovop.host.sysfs import read_str

IOMMU_INTEL = ("intel_iommu=on", "iommu=pt")
IOMMU_AMD = ("iommu=pt",)
PCI_REALLOC = "pci=realloc"
RDMA_SHARED = "ib_core.netns_mode=1"
RDMA_EXCLUSIVE = "ib_core.netns_mode=0"
RDMA_ARGS = {"shared": RDMA_SHARED, "exclusive": RDMA_EXCLUSIVE}


def _read_list(path: Path) -> set[str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return set()
    return {str(a) for a in data} if isinstance(data, list) else set()


class KernelArgs:
    def __init__(self, paths: HostPaths) -> None:
        self.paths = paths
        self.boot = BootConfig(paths)

    def current(self) -> set[str]:
        return set((read_str(self.paths.cmdline) or "").split())

    def boot_id(self) -> str:
        """Changes with every boot: how the reboot guard tells that a reboot happened."""
        return read_str(self.paths.boot_id) or ""

    def cpu_vendor(self) -> str:
        for line in (read_str(self.paths.cpuinfo) or "").splitlines():
            if line.startswith("vendor_id"):
                return line.split(":", 1)[1].strip()
        return "GenuineIntel"

    def iommu_args(self) -> tuple[str, ...]:
        return IOMMU_AMD if self.cpu_vendor() == "AuthenticAMD" else IOMMU_INTEL

    # --- recorded needs (pci=realloc after ENOMEM) -------------------------------------------------
    def recorded(self) -> set[str]:
        return _read_list(self.paths.desired_kargs)

    def record(self, *args: str) -> None:
        """Remember an argument the host needs (e.g. pci=realloc after ENOMEM) across restarts."""
        atomic_write_json(self.paths.desired_kargs, sorted(self.recorded() | set(args)))

    def forget(self, *args: str) -> None:
        atomic_write_json(self.paths.desired_kargs, sorted(self.recorded() - set(args)))

    def desired(self, *, needs_vfio: bool) -> set[str]:
        wanted = set(self.recorded())
        if needs_vfio:
            wanted |= set(self.iommu_args())
        return wanted

    def missing(self, *, needs_vfio: bool) -> list[str]:
        return sorted(self.desired(needs_vfio=needs_vfio) - self.current())

    # --- the boot configuration ------------------------------------------------------------------
    def added(self) -> set[str]:
        """Arguments this daemon added to the boot configuration (the only ones it ever removes)."""
        return _read_list(self.paths.added_kargs)

    def sync(self, desired: set[str]) -> list[str]:
        """Write `desired` for the next boot and drop the ones this daemon added and no longer wants.

        The RDMA mode arguments are exclusive: the opposite one goes too, whoever added it (as upstream
        removes both when the mode changes or is unset). Returns the files edited.

        An argument the running kernel already has is not added (upstream's generic plugin reads
        /proc/cmdline first): a host booted with `intel_iommu=on iommu=pt` by other means, or one whose
        boot configuration the daemon cannot edit, needs no write for vfio-pci.
        """
        unwanted = (self.added() - desired) | (set(RDMA_ARGS.values()) - desired)
        next_boot = self.boot.next_boot_args()
        if next_boot is None and not self.boot.ostree:
            next_boot = set()  # no boot configuration: nothing to remove; adding fails (BootConfigError)
        running = self.current()
        add = sorted(a for a in desired if a not in running and (next_boot is None or a not in next_boot))
        # OSTree's arguments are not read here: rpm-ostree deletes only what is present.
        present = next_boot if next_boot is not None else unwanted
        remove = sorted(a for a in unwanted if a in present)
        # Only what was absent is ours: an argument already in the boot configuration stays the
        # administrator's even when this daemon needs it too.
        missing_before = set(add)
        edited = self.boot.edit(add=add, remove=remove)
        owned = (self.added() | missing_before) - set(remove)
        if owned != self.added():
            atomic_write_json(self.paths.added_kargs, sorted(owned))
        return edited
