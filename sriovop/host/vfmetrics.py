"""The per-VF counter families as Prometheus text: the config daemon's and the metrics exporter's.

The VF series keep the upstream exporter's names exactly (`sriov_vf_rx_bytes`, ..., no `_total`) so
its recording rules and dashboards work; prometheus-client would force a `_total` suffix on counter
families, so these families are rendered here in the text format and appended to a registry's output
by the metrics server (runtime/serving.py's `metrics_server`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from sriovop.host.paths import HostPaths
from sriovop.host.vfstats import COUNTERS, NetlinkVfStats, VfRef, list_vfs, sysfs_netdev, sysfs_pf_side

HELP = {
    "rx_bytes": "Bytes received by the VF",
    "tx_bytes": "Bytes transmitted by the VF",
    "rx_packets": "Packets received by the VF",
    "tx_packets": "Packets transmitted by the VF",
    "rx_dropped": "Received packets dropped for the VF",
    "tx_dropped": "Transmitted packets dropped for the VF",
}
LABELS = ("pf", "vf", "pciAddr", "node")
Sample = tuple[tuple[str, str, str, str], dict[str, int]]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class VfStatsCollector:
    """Reads every VF's counters at scrape time; `sources` is the priority order."""

    def __init__(self, paths: HostPaths, node: str, netns: Callable[[], str | None] | str | None = None,
                 sources: tuple[str, ...] = ("netlink", "sysfs")) -> None:
        unknown = set(sources) - {"netlink", "sysfs"}
        if unknown:
            raise ValueError(f"vf stats sources: unknown {sorted(unknown)}; use netlink and/or sysfs")
        self.paths = paths
        self.node = node
        self._netns = netns
        self.sources = sources
        self._netlink: NetlinkVfStats | None = None
        self._lock = threading.Lock()

    def _nl(self) -> NetlinkVfStats:
        netns = self._netns() if callable(self._netns) else self._netns
        if self._netlink is None or self._netlink.netns != netns:
            if self._netlink is not None:
                self._netlink.close()
            self._netlink = NetlinkVfStats(netns)
        return self._netlink

    def samples(self) -> list[Sample]:
        with self._lock:
            out: list[Sample] = []
            by_pf: dict[str, dict[int, dict[str, int]]] = {}
            for vf in list_vfs(self.paths):
                stats = self._read(vf, by_pf)
                if stats:
                    out.append(((vf.pf_name, str(vf.index), vf.pci, self.node), stats))
            return out

    def _read(self, vf: VfRef, by_pf: dict[str, dict[int, dict[str, int]]]) -> dict[str, int] | None:
        # The kernel sends IFLA_VF_STATS for every VF, zero-filled when the PF driver has no
        # ndo_get_vf_stats (igb, ixgbe: seen on a real 82576, whose VF netdev counted traffic while
        # netlink said 0). All-zero netlink counters therefore only count when no later source knows more.
        zeros: dict[str, int] | None = None
        for source in self.sources:
            if source == "netlink" and vf.pf_name != vf.pf_pci:
                if vf.pf_name not in by_pf:
                    by_pf[vf.pf_name] = self._nl().for_pf(vf.pf_name)
                found = by_pf[vf.pf_name].get(vf.index)
                if found and any(found.values()):
                    return found
                zeros = zeros or found
            elif source == "sysfs":
                found = sysfs_pf_side(self.paths, vf) or sysfs_netdev(self.paths, vf)
                if found:
                    return found
        return zeros

    def render(self) -> str:
        """The VF families in the Prometheus text format (0.0.4)."""
        samples = self.samples()
        lines: list[str] = []
        for counter in COUNTERS:
            name = f"sriov_vf_{counter}"
            lines.append(f"# HELP {name} {HELP[counter]}")
            lines.append(f"# TYPE {name} counter")
            for labels, stats in samples:
                if counter in stats:
                    text = ",".join(f'{k}="{_escape(v)}"' for k, v in zip(LABELS, labels, strict=True))
                    lines.append(f"{name}{{{text}}} {stats[counter]}")
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        with self._lock:
            if self._netlink is not None:
                self._netlink.close()
                self._netlink = None



def iter_series(text: str) -> Iterator[tuple[str, dict[str, str], float]]:
    """Parse `name{labels} value` lines (for tests and tools reading the endpoint)."""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, rest = head.partition("{")
        labels: dict[str, str] = {}
        for part in rest.rstrip("}").split('",') if rest else []:
            key, _, val = part.partition('="')
            labels[key] = val.rstrip('"')
        yield name, labels, float(value)
