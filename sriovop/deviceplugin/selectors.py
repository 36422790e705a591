"""One netDevice selector object of a resource: which devices it claims.

Every non-empty field filters, in upstream's order (vendors, devices, drivers, pciAddresses, acpiIndexes,
pfNames, rootDevices, linkTypes, ddpProfiles, pKeys, isRdma, vdpaType); an empty field does not filter.
Comparison is exact, except PF names (case-insensitive) and `#` index suffixes on pfNames/rootDevices.
`needVhostNet` selects nothing; it adds /dev/vhost-net and /dev/net/tun at Allocate.
"""

from __future__ import annotations

from dataclasses import dataclass

from sriovop.deviceplugin.devices import NetDevice
from sriovop.deviceplugin.indexranges import IndexedName

#: The list-valued selector fields, as spelled in the config file.
LIST_FIELDS = ("vendors", "devices", "drivers", "pciAddresses", "acpiIndexes", "pfNames", "rootDevices",
               "linkTypes", "ddpProfiles", "pKeys")
BOOL_FIELDS = ("isRdma", "needVhostNet")
VDPA_TYPES = ("virtio", "vhost")


@dataclass(frozen=True)
class Selector:
    vendors: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    drivers: tuple[str, ...] = ()
    pci_addresses: tuple[str, ...] = ()
    acpi_indexes: tuple[str, ...] = ()
    pf_names: tuple[IndexedName, ...] = ()
    root_devices: tuple[IndexedName, ...] = ()
    link_types: tuple[str, ...] = ()
    ddp_profiles: tuple[str, ...] = ()
    pkeys: tuple[str, ...] = ()
    is_rdma: bool = False
    need_vhost_net: bool = False
    vdpa_type: str = ""

    def matches(self, dev: NetDevice) -> bool:
        checks = (
            not self.vendors or dev.vendor in self.vendors,
            not self.devices or dev.device in self.devices,
            not self.drivers or dev.driver in self.drivers,
            not self.pci_addresses or dev.pci in self.pci_addresses,
            not self.acpi_indexes or dev.acpi_index in self.acpi_indexes,
            not self.pf_names or any(p.matches(dev.pf_name, dev.vf_index) for p in self.pf_names),
            not self.root_devices or any(r.matches(dev.pf_pci, dev.vf_index) for r in self.root_devices),
            not self.link_types or dev.link_type in {t.lower() for t in self.link_types},
            not self.ddp_profiles or dev.ddp_profile in self.ddp_profiles,
            not self.pkeys or any(_pkey(k) in dev.pkeys for k in self.pkeys),
            not self.is_rdma or bool(dev.rdma_devices),
            not self.vdpa_type or dev.vdpa_type == self.vdpa_type,
        )
        return all(checks)


def _pkey(value: str) -> str:
    try:
        return f"0x{int(value, 16):04x}"
    except ValueError:
        return value
