"""Where things live on a host, relative to a configurable root.

The daemon runs in a container with the host's `/` mounted at `/host`; tests and the demo point the
same code at a simulated tree. Nothing in sriovop.host builds an absolute path without going through
`HostPaths`, which is what makes the simulated host possible.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

#: Directory (under the root) holding the simulator's endpoint description, if the root is simulated.
SIM_DIR = ".sriovop-sim"
SIM_ENDPOINT_FILE = "endpoint.json"


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

    # --- simulator -----------------------------------------------------------------------------
    @property
    def sim_endpoint(self) -> Path:
        return self.root / SIM_DIR / SIM_ENDPOINT_FILE

    def sim_info(self) -> dict[str, str] | None:
        """The simulator endpoint when this root is a simulated host, else None."""
        try:
            data = json.loads(self.sim_endpoint.read_text())
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not isinstance(data, dict):
            return None
        info = {str(k): str(v) for k, v in data.items()}
        if info.get("netns") and info.get("root"):
            info["netns"] = self._netns_seen_from_here(info["netns"], info["root"])
        return info

    def _netns_seen_from_here(self, name: str, sim_root: str) -> str:
        """The simulator's namespace as this process can open it.

        A simulator names its namespace under the machine's /var/run/netns. A daemon in a pod sees the
        machine under its host mount (the simulated root `/host/var/lib/x` is the machine's `/var/lib/x`),
        so there the namespace is the file `/host/var/run/netns/NAME`; on the machine itself the name is
        enough.
        """
        here = str(self.root.resolve())
        if here == sim_root or not here.endswith(sim_root):
            return name
        machine = Path(here[: len(here) - len(sim_root)] or "/")
        # /var/run is usually an absolute link to /run, which inside the pod would point at the pod's own.
        candidates = [machine / "var/run/netns" / name, machine / "run/netns" / name]
        return str(next((c for c in candidates if c.exists()), candidates[0]))
