"""Finding a VF on the host: its PF netdev and VF index (sysfs `physfn`, `virtfnN`), its driver.

Upstream's rules: the PF is the first netdev under `<vf>/physfn/net/`, the index is the N of the
PF's `virtfnN` link that points at the VF; a VF without a netdev is usable only on a userspace
driver (DPDK mode: only the PF-side attributes are set).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sriovop.cni.errors import DEVICE_FAILURE, CniError

DPDK_DRIVERS = frozenset({"vfio-pci", "uio_pci_generic", "igb_uio"})


@dataclass(frozen=True)
class VfDevice:
    pci: str
    pf_pci: str
    pf_name: str
    index: int
    driver: str

    @property
    def dpdk(self) -> bool:
        return self.driver in DPDK_DRIVERS


def _first(directory: Path) -> str | None:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return None
    return names[0] if names else None


def sysfs_netdev(root: Path, pci: str) -> str | None:
    """The VF's netdev as this network namespace's sysfs shows it (None: none, or not in this netns)."""
    return _first(Path(root) / "sys/bus/pci/devices" / pci / "net")


def find_vf(root: Path, pci: str) -> VfDevice:
    dev = Path(root) / "sys/bus/pci/devices" / pci
    if not dev.exists():
        raise CniError(DEVICE_FAILURE, "VF not found", f"deviceID {pci}: no such PCI device on this node")
    physfn = dev / "physfn"
    if not physfn.exists():
        raise CniError(DEVICE_FAILURE, "not a VF", f"deviceID {pci}: has no physfn (not an SR-IOV VF)")
    pf_pci = os.path.basename(os.path.realpath(physfn))
    pf_name = _first(physfn / "net")
    if pf_name is None:
        raise CniError(DEVICE_FAILURE, "PF has no netdev", f"deviceID {pci}: its PF {pf_pci} has no network device")
    index = None
    for entry in os.listdir(physfn):
        if entry.startswith("virtfn") and os.path.basename(os.path.realpath(physfn / entry)) == pci:
            index = int(entry[len("virtfn"):])
            break
    if index is None:
        raise CniError(DEVICE_FAILURE, "VF index not found", f"deviceID {pci}: no virtfnN of {pf_pci} points at it")
    driver_link = dev / "driver"
    driver = os.path.basename(os.path.realpath(driver_link)) if driver_link.exists() else ""
    return VfDevice(pci=pci, pf_pci=pf_pci, pf_name=pf_name, index=index, driver=driver)


def vf_guid(root: Path, pci: str) -> str:
    """An InfiniBand VF's node GUID as `xx:xx:...` (sysfs shows `xxxx:xxxx:xxxx:xxxx`); "" without one."""
    ib = Path(root) / "sys/bus/pci/devices" / pci / "infiniband"
    dev = _first(ib)
    if dev is None:
        return ""
    try:
        raw = (ib / dev / "node_guid").read_text().strip().replace(":", "")
    except OSError:
        return ""
    return ":".join(raw[i:i + 2] for i in range(0, len(raw), 2)) if len(raw) == 16 else ""
