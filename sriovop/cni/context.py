"""What a plugin invocation runs against: the node (sysfs root, kernel seam, state) and the request."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from pyroute2 import IPRoute

from sriovop.cni.errors import INVALID_ENV, CniError
from sriovop.cni.links import netlink_at
from sriovop.cni.rtnl import Rtnl, rtnl_at
from sriovop.cni.server import ServerOptions
from sriovop.cni.vfkernel import RealVfKernel, VfKernel


@dataclass(frozen=True)
class Node:
    root: Path
    kernel: VfKernel
    state_dir: Path
    netns_root: Path = Path("/")
    cni_path_prefix: str = ""

    def host_netlink(self) -> AbstractContextManager[tuple[IPRoute, int]]:
        """A netlink socket in the host namespace and an open descriptor of that namespace."""
        return netlink_at(self.kernel.host_netns)

    def host_rtnl(self) -> AbstractContextManager[tuple[Rtnl, int]]:
        """The same through the ADD path's synchronous rtnetlink (`sriovop.cni.rtnl`)."""
        return rtnl_at(self.kernel.host_netns)


def require_env(env: dict[str, str], *names: str) -> None:
    for name in names:
        if not env.get(name):
            raise CniError(INVALID_ENV, f"{name} is required", f"{name}: the runtime did not set it")


def default_kernel(options: ServerOptions) -> VfKernel:
    """The kernel seam the server was given (its command chooses), else PF netlink on this host."""
    return options.kernel if options.kernel is not None else RealVfKernel()
