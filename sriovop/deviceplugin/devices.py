"""The host's candidate network devices, each a PCI function the device plugin can hand to a pod.

Discovery is the config daemon's (`sriovop.host.Host.discover()`, under a host root, so a simulated host
works the same): a PF with VFs contributes its VFs and not itself (upstream excludes PFs with
`sriov_numvfs > 0`); any other discovered network function contributes itself. The rest of what the
selectors and Allocate need (NUMA node, IOMMU group, ACPI index, RDMA devices, partition keys, the VF's own
link type) is read here from sysfs under the same root.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Any

from sriovop.deviceplugin import rdma
from sriovop.host import Host
from sriovop.host.paths import HostPaths
from sriovop.host.sysfs import link_basename, read_int, read_str

#: ARPHRD_* of a netdev → the encap name upstream's linkTypes selector compares (netlink EncapType).
ENCAP_TYPES = {1: "ether", 32: "infiniband"}
#: NodeState linkType of a PF → encap name (when a VF netdev has no readable `type`).
_PF_LINK_TYPES = {"ETH": "ether", "IB": "infiniband"}


@dataclass(frozen=True)
class NetDevice:
    pci: str
    vendor: str
    device: str
    driver: str
    #: The PF's netdev name and PCI address; empty for a function that is not a VF.
    pf_name: str = ""
    pf_pci: str = ""
    #: N of the PF's `virtfnN` link; None for a function that is not a VF.
    vf_index: int | None = None
    netdev: str = ""
    link_type: str = ""
    numa_node: int | None = None
    iommu_group: str = ""
    acpi_index: str = ""
    rdma_devices: tuple[str, ...] = ()
    pkeys: tuple[str, ...] = ()
    ddp_profile: str = ""
    vdpa_type: str = ""
    #: The PF's administrative link state (True for a function that is not a VF).
    pf_link_up: bool = True


def _numa(paths: HostPaths, pci: str) -> int | None:
    value = read_int(paths.device(pci) / "numa_node")
    return value if value is not None and value >= 0 else None


def _link_type(paths: HostPaths, netdev: str, pf_link_type: str) -> str:
    if not netdev:
        return ""
    arphrd = read_int(paths.class_net / netdev / "type")
    if arphrd is not None:
        return ENCAP_TYPES.get(arphrd, "")
    return _PF_LINK_TYPES.get(pf_link_type, "")


def ddp_profile(paths: HostPaths, pf_pci: str, simulated: bool) -> str:
    """The DDP package a PF runs (`devlink dev info`'s `fw.app.name`, ice/i40e); empty when unknown.

    Only asked on a real host: a simulated root has no devlink device to ask."""
    if simulated or not pf_pci or str(paths.root) != "/":
        return ""
    try:
        out = subprocess.run(["devlink", "-j", "dev", "info", f"pci/{pf_pci}"], capture_output=True, text=True,
                             timeout=5, check=False).stdout
        info: dict[str, Any] = json.loads(out or "{}").get("info", {}).get(f"pci/{pf_pci}", {})
    except (OSError, subprocess.SubprocessError, ValueError, AttributeError):
        return ""
    running = (info.get("versions") or {}).get("running") or {}
    return str(running.get("fw.app.name") or "")


def _function(paths: HostPaths, entry: dict[str, Any], pf: dict[str, Any] | None, simulated: bool) -> NetDevice:
    pci = str(entry["pciAddress"])
    dev = paths.device(pci)
    netdev = str(entry.get("name") or "")
    pf_pci = str(pf["pciAddress"]) if pf else ""
    acpi = read_str(dev / "acpi_index") or ""
    return NetDevice(
        pci=pci, vendor=str(entry.get("vendor") or ""), device=str(entry.get("deviceID") or ""),
        driver=str(entry.get("driver") or link_basename(dev / "driver") or ""),
        pf_name=str(pf.get("name") or "") if pf else "", pf_pci=pf_pci,
        vf_index=int(entry["vfID"]) if pf else None, netdev=netdev,
        link_type=_link_type(paths, netdev, str((pf or entry).get("linkType") or "")),
        numa_node=_numa(paths, pci), iommu_group=link_basename(dev / "iommu_group") or "",
        acpi_index="" if acpi in ("", "0") else acpi,
        rdma_devices=rdma.rdma_devices(paths, pci), pkeys=rdma.pkeys(paths, pci),
        ddp_profile=ddp_profile(paths, pf_pci, simulated) if pf else "",
        vdpa_type=str(entry.get("vdpaType") or ""),
        pf_link_up=(pf.get("linkAdminState") == "up") if pf else True,
    )


def discover_devices(host: Host) -> list[NetDevice]:
    """Every candidate device, in discovery order (PF order, then VF index)."""
    out: list[NetDevice] = []
    simulated = host.simulated
    for iface in host.discover():
        if not iface.get("pciAddress"):
            continue
        if int(iface.get("numVfs") or 0) > 0:
            out.extend(_function(host.paths, vf, iface, simulated) for vf in iface.get("Vfs") or [])
        else:
            out.append(_function(host.paths, iface, None, simulated))
    return out
