"""The simulated sysfs tree's building blocks: files, links and PCI addresses.

Shared by every part of the simulated kernel (devices, eSwitch, modules), so none of them needs another
to write a file the way sysfs shows it.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

#: Where the PCI functions live (sys/bus/pci/devices/<pci> links here, as on a real host).
PCI_ROOT = "sys/devices/pci0000:00"
#: IFF_UP | IFF_BROADCAST | IFF_MULTICAST, what a raised netdev's `flags` shows.
FLAGS_UP = "0x1003"


def rid_to_pci(rid: int, domain: int = 0) -> str:
    return f"{domain:04x}:{rid >> 8:02x}:{(rid >> 3) & 0x1F:02x}.{rid & 7:x}"


def pci_to_rid(pci: str) -> int:
    _, bus, devfn = pci.split(":")
    dev, fn = devfn.split(".")
    return (int(bus, 16) << 8) | (int(dev, 16) << 3) | int(fn, 16)


def mac_for(seed: str, prefix: str = "02") -> str:
    """A stable, locally administered MAC for a name (the same PF gets the same MAC every boot)."""
    h = zlib.crc32(seed.encode())
    return f"{prefix}:{(h >> 24) & 0xFF:02x}:{(h >> 16) & 0xFF:02x}:{(h >> 8) & 0xFF:02x}:{h & 0xFF:02x}:01"


def write(path: Path, value: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value + "\n")


def symlink(target: str, link: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    try:
        link.unlink()
    except FileNotFoundError:
        pass
    os.symlink(target, link)


def unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
