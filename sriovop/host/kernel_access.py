"""Which kernel a host root's writes reach, handed to `Host` by the process that builds it.

Reads are plain files and netlink dumps under the root. Writes and the tool-like requests (devlink,
ethtool, vdpa, udev, modprobe, rdma) go through `KernelIO` and `EswitchIO`, and netdevs are found in
one network namespace. `KernelAccess` bundles those choices so the host layer, the daemon, the device
plugin and the exporter take them as an argument and never decide them: `RealKernelAccess` (the
default everywhere) is this machine's kernel; a composition root that drives something else (the
development simulator, chosen by the CLI's --simulated-host, the demo, the hollow nodes and the tests)
passes its own implementation.
"""

from __future__ import annotations

from typing import Protocol

from sriovop.host.devlink import Devlink
from sriovop.host.eswitch_io import EswitchIO, RealEswitchIO
from sriovop.host.kernelio import KernelIO, RealKernelIO
from sriovop.host.netlink import Netlink
from sriovop.host.paths import HostPaths


class KernelAccess(Protocol):
    @property
    def simulated(self) -> bool:
        """True when the kernel is no machine this process may reboot: a needed reboot is reported instead."""

    def netns(self) -> str | None:
        """The network namespace of the host's netdevs (a name or a path); None: this process's own."""

    def generation(self) -> object:
        """Changes when the kernel behind the root was replaced under a running process (a simulated
        host's reboot): whoever holds a `Host` opens a new one."""

    def open_io(self, paths: HostPaths, netlink: Netlink) -> KernelIO:
        """The write seam for this root; raises `DiscoveryError` when the kernel cannot be reached."""

    def open_eswitch(self, paths: HostPaths, io: KernelIO, devlink: Devlink) -> EswitchIO:
        """The eSwitch seam; `io` is what `open_io` returned (an implementation may share its channel)."""


class RealKernelAccess:
    """This machine's kernel: sysfs writes and netlink in this process's namespace, the host's tools."""

    @property
    def simulated(self) -> bool:
        return False

    def netns(self) -> str | None:
        return None

    def generation(self) -> object:
        return None

    def open_io(self, paths: HostPaths, netlink: Netlink) -> KernelIO:
        return RealKernelIO(netlink, paths.root)

    def open_eswitch(self, paths: HostPaths, io: KernelIO, devlink: Devlink) -> EswitchIO:
        return RealEswitchIO(paths.root, devlink)
