"""The CNI's kernel seam (`VfKernel`, cni/vfkernel.py) on the simulated host.

The simulator's PFs are veths, which cannot answer IFLA_VF_*; `SimVfKernel` sends those requests to
the simulator (sim/vfconfig.py answers like the PF drivers do, refusals included). VF netdevs are
found by ifalias, the VF's PCI address, which `wire_vf_netdevs` (sim/vf_netdevs.py) gives the real
links standing in for them. `sriovop cni-server --simulated-host` builds one; the CNI never knows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyroute2.netlink.exceptions import NetlinkError

from sriovop.cni.links import netlink_at
from sriovop.cni.rtnl import rtnl_at
from sriovop.cni.vfdevice import sysfs_netdev
from sriovop.cni.vfkernel import VfChange, VfConfig, one_by_one
from sriovop.host.paths import HostPaths
from sriovop.sim.client import SimKernelIO
from sriovop.sim.endpoint import read_endpoint

NETNS_DIR = "/var/run/netns"


def running_endpoint(root: Path) -> dict[str, str]:
    """The endpoint of the simulator serving `root`; FileNotFoundError when none runs there."""
    info = read_endpoint(root)
    if info is None:
        raise FileNotFoundError(f"{root} is not a simulated host (no running simulator)")
    return info


def alias(msg: Any) -> str:
    return str(msg.get_attr("IFLA_IFALIAS") or "")


class SimVfKernel:
    """VfKernel for a simulated root: PF-side VF attributes by the simulator, netdevs by ifalias."""

    def __init__(self, root: Path) -> None:
        info = running_endpoint(root)
        self.io = SimKernelIO(HostPaths.at(root), info["socket"])
        self.netns_name = info["netns"]

    @property
    def host_netns(self) -> str:
        return f"{NETNS_DIR}/{self.netns_name}"

    def vf_config(self, pf: str, pf_pci: str, vf: int) -> VfConfig:
        c = dict(self.io.request({"op": "get_vf_config", "pf": pf_pci, "vf": vf}, 30.0)["config"])  # type: ignore[call-overload]
        return VfConfig(**{k: c[k] for k in VfConfig.__dataclass_fields__})

    def set_vf(self, pf: str, pf_pci: str, vf: int, change: VfChange) -> None:
        """Like the real PF: everything in one `set_vf_config` (the simulator applies all or nothing); a
        refusal is retried attribute by attribute in upstream's order, so the error names the refused
        attribute."""
        if change.empty():
            return
        try:
            self._apply(pf_pci, vf, change)
            return
        except OSError:
            pass
        for field_name, single in one_by_one(change):
            try:
                self._apply(pf_pci, vf, single)
            except OSError as e:
                raise OSError(e.errno, f"{field_name}: {pf} refused it for VF {vf}: {e.strerror or e}") from e

    def _apply(self, pf_pci: str, vf: int, change: VfChange) -> None:
        changes: dict[str, Any] = {}
        if change.admin_mac is not None:
            changes["admin_mac"] = change.admin_mac
        if change.vlan is not None:
            changes.update(vlan=change.vlan[0], vlan_qos=change.vlan[1], vlan_proto=change.vlan[2])
        if change.rate is not None:
            changes.update(min_tx_rate=change.rate[0], max_tx_rate=change.rate[1])
        if change.spoofchk is not None:
            changes["spoofchk"] = change.spoofchk
        if change.link_state is not None:
            changes["link_state"] = change.link_state
        if change.trust is not None:
            changes["trust"] = change.trust
        self.io.request({"op": "set_vf_config", "pf": pf_pci, "vf": vf, "changes": changes}, 30.0)

    def set_vf_guid(self, pf: str, pf_pci: str, vf: int, guid: str) -> None:
        self.io.set_vf_guid(pf, pf_pci, vf, guid)

    def vf_netdev(self, root: Path, vf_pci: str) -> str | None:
        """By ifalias; the name sysfs shows is tried first (one request instead of a dump)."""
        named = sysfs_netdev(root, vf_pci)
        if named is not None:
            with rtnl_at(self.host_netns) as (nl, _fd):
                try:
                    link = nl.link(named)
                except NetlinkError:
                    link = None
            if link is not None and link.alias == vf_pci:
                return named
        with netlink_at(self.host_netns) as (ipr, _fd):
            for msg in ipr.get_links():
                if alias(msg) == vf_pci:
                    return str(msg.get_attr("IFLA_IFNAME"))
        return None
