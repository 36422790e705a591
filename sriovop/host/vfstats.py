"""Per-VF traffic counters, read on demand from the kernel.

Sources, in upstream exporter's priority order (`--collector.vfstatspriority=netlink,sysfs`):
1. netlink: the PF's IFLA_VFINFO_LIST with IFLA_VF_STATS (what `ip -s link show <pf>` prints per VF);
   counts what the NIC's embedded switch saw, so it works for VFs bound to vfio-pci and for VFs moved
   into pods;
2. sysfs `<pf device>/sriov/<vf>/stats/*` (Intel out-of-tree drivers expose these);
3. sysfs `<vf device>/net/<netdev>/statistics/*` (the VF's own netdev in the host namespace).
A VF none of them describes has no series (better no number than a wrong zero).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from sriovop.host.paths import HostPaths

#: Counter → (netlink attribute, sysfs file name).
COUNTERS: dict[str, tuple[str, str]] = {
    "rx_bytes": ("IFLA_VF_STATS_RX_BYTES", "rx_bytes"),
    "tx_bytes": ("IFLA_VF_STATS_TX_BYTES", "tx_bytes"),
    "rx_packets": ("IFLA_VF_STATS_RX_PACKETS", "rx_packets"),
    "tx_packets": ("IFLA_VF_STATS_TX_PACKETS", "tx_packets"),
    "rx_dropped": ("IFLA_VF_STATS_RX_DROPPED", "rx_dropped"),
    "tx_dropped": ("IFLA_VF_STATS_TX_DROPPED", "tx_dropped"),
}
RTEXT_FILTER_VF = 1


@dataclass(frozen=True)
class VfRef:
    pf_pci: str
    pf_name: str
    index: int
    pci: str


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def list_vfs(paths: HostPaths) -> Iterator[VfRef]:
    """Every VF of every PF under the root (PFs without a netdev are named by their PCI address)."""
    devices = str(paths.pci_devices)
    try:
        entries = sorted(os.listdir(devices))
    except OSError:
        return
    for pf in entries:
        dev = f"{devices}/{pf}"
        if os.path.islink(f"{dev}/physfn") or not os.path.exists(f"{dev}/sriov_numvfs"):
            continue
        try:
            names = sorted(os.listdir(f"{dev}/net"))
        except OSError:
            names = []
        pf_name = names[0] if names else pf
        try:
            links = [e for e in os.listdir(dev) if e.startswith("virtfn")]
        except OSError:
            continue
        for entry in sorted(links, key=lambda e: int(e[6:]) if e[6:].isdigit() else -1):
            try:
                index = int(entry[6:])
                vf = os.path.basename(os.readlink(f"{dev}/{entry}"))
            except (ValueError, OSError):
                continue
            yield VfRef(pf, pf_name, index, vf)


def sysfs_pf_side(paths: HostPaths, vf: VfRef) -> dict[str, int] | None:
    base = f"{paths.device(vf.pf_pci)}/sriov/{vf.index}/stats"
    return _read_all(base)


def sysfs_netdev(paths: HostPaths, vf: VfRef) -> dict[str, int] | None:
    net = f"{paths.device(vf.pci)}/net"
    try:
        names = sorted(os.listdir(net))
    except OSError:
        return None
    for name in names:
        found = _read_all(f"{net}/{name}/statistics")
        if found is not None:
            return found
    return None


def _read_all(base: str) -> dict[str, int] | None:
    out: dict[str, int] = {}
    for counter, (_attr, filename) in COUNTERS.items():
        value = _read_int(f"{base}/{filename}")
        if value is not None:
            out[counter] = value
    return out or None


def parse_vf_stats(msg: Any) -> dict[int, dict[str, int]]:
    """IFLA_VFINFO_LIST of one RTM_NEWLINK message → {vf index: counters}."""
    out: dict[int, dict[str, int]] = {}
    vflist = msg.get_attr("IFLA_VFINFO_LIST")
    if vflist is None:
        return out
    for info in vflist.get_attrs("IFLA_VF_INFO"):
        mac = info.get_attr("IFLA_VF_MAC")
        stats = info.get_attr("IFLA_VF_STATS")
        if mac is None or stats is None:
            continue
        counters = {}
        for counter, (attr, _filename) in COUNTERS.items():
            value = stats.get_attr(attr)
            if value is not None:
                counters[counter] = int(value)
        if counters:
            out[int(mac["vf"])] = counters
    return out


class NetlinkVfStats:
    """One RTNL socket (in the host layer's namespace), used only by scrapes, under a lock."""

    def __init__(self, netns: str | None) -> None:
        self.netns = netns
        self._ipr: IPRoute | None = None
        self._lock = threading.Lock()

    def for_pf(self, pf_name: str) -> dict[int, dict[str, int]]:
        with self._lock:
            try:
                if self._ipr is None:
                    self._ipr = IPRoute(netns=self.netns) if self.netns else IPRoute()
                msgs = self._ipr.link("get", ifname=pf_name, ext_mask=RTEXT_FILTER_VF)
            except (NetlinkError, OSError, ValueError):
                self._close()
                return {}
        return parse_vf_stats(msgs[0]) if msgs else {}

    def _close(self) -> None:
        if self._ipr is not None:
            try:
                self._ipr.close()
            finally:
                self._ipr = None

    def close(self) -> None:
        with self._lock:
            self._close()
