"""Where things live on a host, relative to a configurable root.

The daemon runs in a container with the host's `/` mounted at `/host`; tests and the demo point the
same code at another tree (a simulated host). Nothing in sriovop.host builds an absolute path without
going through `HostPaths`, which is what makes that possible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class HostPaths:
    root: Path = Path("/")
    #: Operator state (PF record files, desired kernel args); upstream uses /etc/sriov-operator.
    state_dir_rel: str = "etc/sriov-operator"
    #: Initial-state checkpoint; upstream keeps it in DEST_DIR (/host/tmp).
    checkpoint_rel: str = "tmp/sno-initial-node-state.json"
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def at(cls, root: str | Path, *, state_dir: str | None = None) -> HostPaths:
        root = Path(root)
        if state_dir is None:
            return cls(root=root)
        return cls(root=root, state_dir_rel=state_dir.lstrip("/"))

    def under(self, rel: str) -> Path:
        return self.root / rel.lstrip("/")

    # --- sysfs ---------------------------------------------------------------------------------
    @property
    def sys(self) -> Path:
        return self.root / "sys"

    @property
    def pci_devices(self) -> Path:
        return self.root / "sys/bus/pci/devices"

    @property
    def pci_drivers(self) -> Path:
        return self.root / "sys/bus/pci/drivers"

    @property
    def drivers_probe(self) -> Path:
        return self.root / "sys/bus/pci/drivers_probe"

    @property
    def class_net(self) -> Path:
        return self.root / "sys/class/net"

    def device(self, pci: str) -> Path:
        return self.pci_devices / pci

    def driver_dir(self, driver: str) -> Path:
        return self.pci_drivers / driver

    # --- proc ----------------------------------------------------------------------------------
    @property
    def cmdline(self) -> Path:
        return self.root / "proc/cmdline"

    @property
    def cpuinfo(self) -> Path:
        return self.root / "proc/cpuinfo"

    @property
    def boot_id(self) -> Path:
        return self.root / "proc/sys/kernel/random/boot_id"

    def sys_module(self, name: str) -> Path:
        """Present while a module is loaded (or built in with parameters)."""
        return self.root / "sys/module" / name.replace("-", "_")

    @property
    def modprobe_d(self) -> Path:
        return self.root / "etc/modprobe.d"

    # --- operator state ------------------------------------------------------------------------
    @property
    def state_dir(self) -> Path:
        return self.root / self.state_dir_rel

    @property
    def pci_records(self) -> Path:
        return self.state_dir / "pci"

    def pci_record(self, pci: str) -> Path:
        return self.pci_records / pci

    @property
    def desired_kargs(self) -> Path:
        return self.state_dir / "desired-kernel-args.json"

    @property
    def added_kargs(self) -> Path:
        return self.state_dir / "added-kernel-args.json"

    @property
    def checkpoint(self) -> Path:
        return self.root / self.checkpoint_rel
