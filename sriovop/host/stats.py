"""Per-VF traffic counters for the daemon's metrics (sriov_vf_rx_bytes & co).

Source order: the PF's netlink VF statistics (IFLA_VF_STATS, which also covers VFs bound to vfio-pci
and handed to DPDK) and, for VFs netlink does not report, the VF netdev's sysfs `statistics/` files.
On the simulated host PFs are veths without VFs, so the sysfs files the simulator keeps are the source.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from sriovop.host.host import Host

COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_dropped", "tx_dropped")


@dataclass(frozen=True)
class VfCounters:
    pf: str
    vf: int
    pci_addr: str
    values: dict[str, int]


def _sysfs_vf_stats(host: Host, vf_pci: str) -> dict[str, int] | None:
    net = host.paths.device(vf_pci) / "net"
    try:
        name = sorted(os.listdir(net))[0]
    except (OSError, IndexError):
        return None
    values = {}
    for counter in COUNTERS:
        try:
            values[counter] = int((net / name / "statistics" / counter).read_text())
        except (OSError, ValueError):
            return None
    return values


def vf_counters(host: Host, interfaces: list[dict[str, Any]]) -> list[VfCounters]:
    """Counters of every VF in a discovery result (VFs with no source are left out)."""
    out = []
    for iface in interfaces:
        vfs = iface.get("Vfs") or []
        if not vfs:
            continue
        pf_name = iface.get("name", "")
        by_netlink = host.netlink.vf_stats(pf_name) if pf_name else {}
        for vf in vfs:
            nl = by_netlink.get(int(vf["vfID"]))
            values = {c: nl.get(c, 0) for c in COUNTERS} if nl else _sysfs_vf_stats(host, vf["pciAddress"])
            if values:
                out.append(VfCounters(pf_name, int(vf["vfID"]), vf["pciAddress"], values))
    return out
