"""Which devices each resource gets: the resources in file order, each resource's selectors in order, and a
device joins only the first selector (of any resource) that claims it, as upstream's manager does.

A pool remembers the selector that claimed each device, because `isRdma` and `needVhostNet` of that
selector decide what Allocate adds for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sriovop.deviceplugin.config import ResourceConfig
from sriovop.deviceplugin.devices import NetDevice
from sriovop.deviceplugin.selectors import Selector


@dataclass
class ResourcePool:
    config: ResourceConfig
    #: PCI address → device, in claim order (which is discovery order).
    devices: dict[str, NetDevice] = field(default_factory=dict)
    claimed_by: dict[str, Selector] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """`<prefix>/<resourceName>`, the extended resource the kubelet advertises."""
        return self.config.full_name

    def signature(self) -> tuple[object, ...]:
        """Equal signatures = nothing a pod could see changed (used to keep a server across a reload)."""
        return (self.config, tuple((pci, dev.driver, dev.iommu_group, dev.rdma_devices, self.claimed_by[pci])
                                   for pci, dev in self.devices.items()))


def build_pools(configs: Iterable[ResourceConfig], devices: Iterable[NetDevice]) -> list[ResourcePool]:
    candidates = list(devices)
    claimed: set[str] = set()
    pools = []
    for config in configs:
        pool = ResourcePool(config)
        for selector in config.selectors:
            for dev in candidates:
                if dev.pci not in claimed and selector.matches(dev):
                    claimed.add(dev.pci)
                    pool.devices[dev.pci] = dev
                    pool.claimed_by[dev.pci] = selector
        pools.append(pool)
    return pools
