"""The simulated kernel's device model: PFs, VFs, their faults, and the table every part looks them up in.

`DeviceTable` is the state the kernel (which creates and removes functions, sim/kernel.py) and the
eSwitch (which hangs representors and vDPA devices on them, sim/eswitch.py) share; each gets it
handed in, so neither imports the other. `KernelError` is how all of them refuse, with the errno the
real kernel gives.
"""

from __future__ import annotations

import errno
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sriovop.sim.models import NicModel
from sriovop.sim.tree import PCI_ROOT


class KernelError(OSError):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)


@dataclass
class Faults:
    """Per-PF fault injection (settable at run time through the simulator socket)."""

    enomem: bool = False
    #: Seconds between a successful sriov_numvfs write and the VFs appearing.
    vf_delay: float = 0.0
    #: VF drivers that refuse to bind (probe fails): e.g. {"vfio-pci"} or {"iavf"}.
    refuse_bind: set[str] = field(default_factory=set)
    #: The PF is hot-unplugged right after its VFs are created.
    vanish_after_numvfs: bool = False
    #: Seconds sriov_numvfs writes hang before completing (a slow firmware).
    numvfs_write_delay: float = 0.0

    def update(self, values: dict[str, Any]) -> None:
        for key, value in values.items():
            if not hasattr(self, key):
                raise KernelError(errno.EINVAL, f"unknown fault {key!r}")
            setattr(self, key, set(value) if key == "refuse_bind" else value)


@dataclass
class SimVf:
    pci: str
    index: int
    driver: str = ""
    override: str = ""
    admin_mac: str = ""
    mtu: int = 1500


@dataclass
class SimPf:
    pci: str
    model: NicModel
    port: int
    ifname: str
    alt_name: str
    mac: str
    driver: str = ""
    override: str = ""
    numvfs: int = 0
    vfs: dict[int, SimVf] = field(default_factory=dict)
    faults: Faults = field(default_factory=Faults)
    timer: threading.Timer | None = None


class DeviceTable:
    """The PCI functions of one simulated host, by address. Callers hold the kernel's lock."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.pfs: dict[str, SimPf] = {}
        #: VF PCI address → its PF and itself.
        self.vf_owner: dict[str, tuple[SimPf, SimVf]] = {}

    def dev_dir(self, pci: str) -> Path:
        return self.root / PCI_ROOT / pci

    def device(self, pci: str) -> tuple[SimPf | None, SimVf | None]:
        """(PF, None) for a PF, (its PF, VF) for a VF, (None, None) for no such function."""
        if pci in self.pfs:
            return self.pfs[pci], None
        owner = self.vf_owner.get(pci)
        if owner is not None:
            return owner[0], owner[1]
        return None, None
