"""Discovery on OpenStack: each passthrough NIC on a Neutron network is one PF-like interface.

Upstream's openstack platform (DiscoverSriovDevices): a network-class PCI device that the metadata
places on a network is reported with `totalvfs: 1`, `numVfs: 1` and a single VF (itself, `vfID` 0), and
`netFilter: openstack/NetworkID:<uuid>`; devices the metadata does not know are left out. The netdev
is read as on bare metal (name, MAC, MTU, speed, link type); the metadata's MAC stands in when the
device has no netdev (bound to vfio-pci).
"""

from __future__ import annotations

from typing import Any

from sriovop.host.discovery import NETWORK_CLASS_PREFIX, Discoverer, finalize
from sriovop.host.openstack import DeviceInfo
from sriovop.host.sysfs import hex_id, link_basename, listdir, read_str


class VirtualDiscoverer(Discoverer):
    def __init__(self, *args: Any, devices: dict[str, DeviceInfo], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.devices = devices

    def discover(self) -> list[dict[str, Any]]:
        links = self.netlink.links()
        out = []
        for addr in listdir(self.paths.pci_devices):
            info = self.devices.get(addr)
            dev = self.paths.device(addr)
            if info is None or not (read_str(dev / "class") or "").startswith(NETWORK_CLASS_PREFIX):
                continue
            names = self._netdev(dev)
            name = names[0] if names else ""
            link = self._link(name, dev / "net" / name, links) if name else {}
            speed = read_str(self.paths.class_net / name / "speed") if name else None
            driver = link_basename(dev / "driver") or ""
            vendor, device = hex_id(dev / "vendor"), hex_id(dev / "device")
            mac = link.get("mac") or info.mac
            mtu = link.get("mtu", 0)
            iface: dict[str, Any] = {
                "name": name, "mac": mac, "driver": driver, "pciAddress": addr, "vendor": vendor,
                "deviceID": device, "netFilter": info.net_filter, "mtu": mtu, "numVfs": 1,
                "linkSpeed": f"{speed} Mb/s" if speed else "", "linkType": link.get("link_type", "") if name else "",
                "totalvfs": 1,
                "Vfs": [{"name": name, "mac": mac, "driver": driver, "pciAddress": addr, "vendor": vendor,
                         "deviceID": device, "mtu": mtu, "vfID": 0}],
            }
            out.append({k: v for k, v in iface.items() if k == "pciAddress" or v not in ("", 0, None, [])})
        return finalize(out)
