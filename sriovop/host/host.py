"""`Host`: one object bundling everything that touches a machine, rooted at a root, reaching the kernel the
caller chose (`KernelAccess`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sriovop.host.decision import HostFacts
from sriovop.host.devlink import Devlink
from sriovop.host.discovery import Discoverer, DiscoveryOptions
from sriovop.host.discovery_virtual import VirtualDiscoverer
from sriovop.host.errors import DiscoveryError
from sriovop.host.eswitch_io import EswitchIO
from sriovop.host.firmware_query_cache import FirmwareQueryCache
from sriovop.host.kargs import KernelArgs
from sriovop.host.kernel_access import KernelAccess, RealKernelAccess
from sriovop.host.kernelio import KernelIO
from sriovop.host.netlink import Netlink
from sriovop.host.nics import SupportedNics, default_supported_nics
from sriovop.host.openstack import DeviceInfo, OpenStackMetadata, OpenStackMetadataError, netdev_macs
from sriovop.host.paths import HostPaths
from sriovop.host.records import Checkpoint, PfRecords
from sriovop.host.switchdev import Switchdev


class Host:
    """Construct with the host root and the kernel access (default: this machine's kernel).

    `netns` defaults to the access's namespace (this process's own for the real kernel). Not
    thread-safe: one Host per daemon loop.
    """

    def __init__(
        self,
        root: str | Path = "/",
        *,
        state_dir: str | None = None,
        netns: str | None = None,
        dev_mode: bool = False,
        supported: SupportedNics | None = None,
        kernel: KernelAccess | None = None,
        platform: str = "baremetal",
        openstack: OpenStackMetadata | None = None,
    ) -> None:
        self.paths = HostPaths.at(root, state_dir=state_dir)
        self.kernel: KernelAccess = kernel if kernel is not None else RealKernelAccess()
        self.netlink = Netlink(netns if netns is not None else self.kernel.netns())
        try:
            self.io: KernelIO = self.kernel.open_io(self.paths, self.netlink)
        except BaseException:
            self.netlink.close()
            raise
        self.devlink = Devlink()
        self.eswitch: EswitchIO = self.kernel.open_eswitch(self.paths, self.io, self.devlink)
        self.switchdev = Switchdev(self.paths, self.io, self.eswitch)
        self.records = PfRecords(self.paths)
        self.checkpoint = Checkpoint(self.paths)
        self.kargs = KernelArgs(self.paths)
        #: `mstconfig q` results for this boot; outlives the per-pass plugins (plugins.mellanox).
        self.firmware_queries = FirmwareQueryCache(self.paths.boot_id)
        self.discovery_options = DiscoveryOptions(dev_mode=dev_mode, supported=supported or default_supported_nics())
        #: "openstack": passthrough NICs with their Neutron network as netFilter (discovery_virtual.py).
        self.platform = platform
        self.openstack = openstack if openstack is not None else OpenStackMetadata(self.paths)
        self._openstack_devices: dict[str, DeviceInfo] | None = None

    @property
    def simulated(self) -> bool:
        return self.kernel.simulated

    def discover(self) -> list[dict[str, Any]]:
        """NodeState `status.interfaces` for this host."""
        if self.platform == "openstack":
            return VirtualDiscoverer(self.paths, self.netlink, self.eswitch, self.records, self.discovery_options,
                                     switchdev=self.switchdev, devices=self.openstack_devices()).discover()
        return Discoverer(self.paths, self.netlink, self.eswitch, self.records, self.discovery_options,
                          switchdev=self.switchdev).discover()

    def openstack_devices(self) -> dict[str, DeviceInfo]:
        """Read once per Host: from the initial-state checkpoint when it has them (upstream's Init: the
        metadata is not asked again after the first start), else from the config drive or the metadata
        service (raises DiscoveryError naming what was tried)."""
        if self._openstack_devices is None:
            known = {str(i["pciAddress"]): DeviceInfo(str(i.get("mac") or ""), str(i["netFilter"]))
                     for i in self.checkpoint.interfaces() if i.get("pciAddress") and i.get("netFilter")}
            if not known:
                try:
                    macs = {name: link.mac for name, link in self.netlink.links().items()}
                    known = self.openstack.devices_info(netdev_macs(self.paths, macs))
                except OpenStackMetadataError as exc:
                    raise DiscoveryError(str(exc)) from exc
            self._openstack_devices = known
        return self._openstack_devices

    def facts(self) -> HostFacts:
        """What the drain/reboot decision needs from this host besides the NodeState."""
        return HostFacts(configured={pci: self.records.externally_managed(pci) for pci in self.records.all()},
                         cmdline=frozenset(self.kargs.current()), recorded_kargs=frozenset(self.kargs.recorded()),
                         iommu_args=self.kargs.iommu_args(), rdma_mode=self.io.rdma_netns_mode() or "")

    def init(self) -> list[dict[str, Any]]:
        """Discover and write the initial-state checkpoint if none exists (daemon start-up)."""
        interfaces = self.discover()
        self.checkpoint.ensure(interfaces)
        return interfaces

    def close(self) -> None:
        self.io.close()
        self.netlink.close()
        self.eswitch.close()

    def __enter__(self) -> Host:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
