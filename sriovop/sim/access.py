"""`SimKernelAccess`: the host layer's `KernelAccess` for a simulated root.

It finds the simulator through its endpoint file on every call, so a process that outlives a simulator
reboot (the demo and the tests reboot a simulator under a running daemon) sees the new socket and
namespace: `generation()` changes and the daemon reopens its `Host`. A root whose simulator is not
running is refused when a `Host` is opened: writing plain files under a simulated tree would silently
"succeed" and mean nothing.
"""

from __future__ import annotations

from pathlib import Path

from sriovop.host.devlink import Devlink
from sriovop.host.errors import DiscoveryError
from sriovop.host.eswitch_io import EswitchIO
from sriovop.host.kernelio import KernelIO
from sriovop.host.netlink import Netlink
from sriovop.host.paths import HostPaths
from sriovop.sim.client import SimEswitchIO, SimKernelIO
from sriovop.sim.endpoint import SIM_DIR, SIM_ENDPOINT_FILE, read_endpoint


class SimKernelAccess:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    @property
    def simulated(self) -> bool:
        return True

    def netns(self) -> str | None:
        return (read_endpoint(self.root) or {}).get("netns") or None

    def generation(self) -> object:
        info = read_endpoint(self.root)
        return None if info is None else (info.get("socket"), info.get("netns"))

    def open_io(self, paths: HostPaths, netlink: Netlink) -> KernelIO:
        info = read_endpoint(self.root)
        if info is None:
            raise DiscoveryError(f"{self.root} is a simulated host but its simulator is not running "
                                 f"(no {SIM_DIR}/{SIM_ENDPOINT_FILE})")
        return SimKernelIO(paths, info["socket"])

    def open_eswitch(self, paths: HostPaths, io: KernelIO, devlink: Devlink) -> EswitchIO:
        if not isinstance(io, SimKernelIO):
            raise TypeError(f"a simulated eSwitch needs the simulator's KernelIO, not {type(io).__name__}")
        return SimEswitchIO(io)
