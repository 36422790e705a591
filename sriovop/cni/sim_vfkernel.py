"""The CNI's kernel seam on the simulated host, and real netdevs for its VFs.

The simulator's PFs are veths, which cannot answer IFLA_VF_*; `SimVfKernel` sends those requests to
the simulator (`sriovop.host.sim_vfconfig` answers like the PF drivers do, refusals included). The
simulator's VF netdevs exist only in its sysfs tree, so `wire_vf_netdevs` gives each one a real
netdev in the simulator's network namespace: a veth (this kernel may lack dummy; a veth moves between
namespaces like a VF) with the sysfs name, MAC and MTU, and the VF's PCI address as its ifalias. The
CNI then moves, renames, readdresses and raises real links; only the PF side is simulated.

A real VF outlives a dying pod namespace (the kernel returns physical devices to the initial
namespace); a veth would be destroyed with it. `kill_netns` does what the kernel does for a VF: the
simulated VFs in the namespace go back to the host namespace, under their pod names, then the
namespace is deleted.
"""

from __future__ import annotations

import errno
import zlib
from pathlib import Path
from typing import Any

from pyroute2 import IPRoute, netns
from pyroute2.netlink.exceptions import NetlinkError

from sriovop.cni.links import netlink_at
from sriovop.cni.vfdevice import sysfs_netdev
from sriovop.cni.vfkernel import VfChange, VfConfig
from sriovop.host.kernelio import SimKernelIO
from sriovop.host.paths import HostPaths

NETNS_DIR = "/var/run/netns"


def _sim(root: Path) -> tuple[HostPaths, dict[str, str]]:
    paths = HostPaths.at(root)
    info = paths.sim_info()
    if info is None:
        raise FileNotFoundError(f"{root} is not a simulated host")
    return paths, info


def _alias(msg: Any) -> str:
    return str(msg.get_attr("IFLA_IFALIAS") or "")


class SimVfKernel:
    """VfKernel for a simulated root: PF-side VF attributes by the simulator, netdevs by ifalias."""

    def __init__(self, root: Path) -> None:
        paths, info = _sim(root)
        self.io = SimKernelIO(paths, info["socket"])
        self.netns_name = info["netns"]

    @property
    def host_netns(self) -> str:
        return f"{NETNS_DIR}/{self.netns_name}"

    def vf_config(self, pf: str, pf_pci: str, vf: int) -> VfConfig:
        c = dict(self.io.request({"op": "get_vf_config", "pf": pf_pci, "vf": vf}, 30.0)["config"])  # type: ignore[call-overload]
        return VfConfig(**{k: c[k] for k in VfConfig.__dataclass_fields__})

    def set_vf(self, pf: str, pf_pci: str, vf: int, change: VfChange) -> None:
        steps: list[tuple[str, dict[str, Any]]] = []
        if change.vlan is not None:
            steps.append(("vlan", {"vlan": change.vlan[0], "vlan_qos": change.vlan[1], "vlan_proto": change.vlan[2]}))
        if change.rate is not None:
            steps.append(("max_tx_rate", {"min_tx_rate": change.rate[0], "max_tx_rate": change.rate[1]}))
        if change.spoofchk is not None:
            steps.append(("spoofchk", {"spoofchk": change.spoofchk}))
        if change.trust is not None:
            steps.append(("trust", {"trust": change.trust}))
        if change.link_state is not None:
            steps.append(("link_state", {"link_state": change.link_state}))
        if change.admin_mac is not None:
            steps.insert(1 if change.vlan is not None else 0, ("mac", {}))
        for field_name, changes in steps:
            try:
                if field_name == "mac":
                    self.io.set_vf_mac(pf, pf_pci, vf, str(change.admin_mac))
                else:
                    self.io.request({"op": "set_vf_config", "pf": pf_pci, "vf": vf, "changes": changes}, 30.0)
            except OSError as e:
                raise OSError(e.errno, f"{field_name}: {pf} refused it for VF {vf}: {e.strerror or e}") from e

    def set_vf_guid(self, pf: str, pf_pci: str, vf: int, guid: str) -> None:
        self.io.set_vf_guid(pf, pf_pci, vf, guid)

    def vf_netdev(self, root: Path, vf_pci: str) -> str | None:
        """By ifalias; the name sysfs shows is tried first (one request instead of a dump)."""
        with netlink_at(self.host_netns) as (ipr, _fd):
            named = sysfs_netdev(root, vf_pci)
            if named is not None:
                try:
                    msgs = ipr.link("get", ifname=named)
                except NetlinkError:
                    msgs = []
                if msgs and _alias(msgs[0]) == vf_pci:
                    return named
            for msg in ipr.get_links():
                if _alias(msg) == vf_pci:
                    return str(msg.get_attr("IFLA_IFNAME"))
        return None


def wire_vf_netdevs(root: Path) -> dict[str, str]:
    """A real netdev for every simulated VF that has one in sysfs; returns PCI address → name."""
    _paths, info = _sim(root)
    wired: dict[str, str] = {}
    devices = Path(root) / "sys/bus/pci/devices"
    with IPRoute(netns=info["netns"]) as ipr:
        existing = {_alias(m) for m in ipr.get_links()}
        for dev in sorted(devices.iterdir()):
            net = dev / "net"
            if not (dev / "physfn").exists() or not net.is_dir() or dev.name in existing:
                continue
            for nd in net.iterdir():
                peer = f"w{zlib.crc32(dev.name.encode()):08x}"
                ipr.link("add", ifname=nd.name, kind="veth", peer={"ifname": peer})
                index = ipr.link_lookup(ifname=nd.name)[0]
                ipr.link("set", index=index, address=(nd / "address").read_text().strip(),
                         mtu=int((nd / "mtu").read_text()), ifalias=dev.name)
                ipr.link("set", index=ipr.link_lookup(ifname=peer)[0], state="up")
                wired[dev.name] = nd.name
    return wired


def kill_netns(root: Path, name: str) -> list[str]:
    """Delete a pod namespace the way the kernel treats a VF in it: the simulated VFs come back to the
    host namespace first (renamed devN when their name is taken there). Returns the names they got."""
    _paths, info = _sim(root)
    returned: list[str] = []
    with IPRoute(netns=name) as pod, IPRoute(netns=info["netns"]) as host:
        taken = {str(m.get_attr("IFLA_IFNAME")) for m in host.get_links()}
        for msg in pod.get_links():
            if _alias(msg).count(":") != 2:
                continue
            ifname = str(msg.get_attr("IFLA_IFNAME"))
            target = ifname
            n = 0
            while target in taken:
                target, n = f"dev{n}", n + 1
            try:
                pod.link("set", index=msg["index"], net_ns_fd=f"{NETNS_DIR}/{info['netns']}", ifname=target)
            except NetlinkError as e:
                raise OSError(e.code or errno.EIO, f"returning {ifname} to the host: {e}") from e
            taken.add(target)
            returned.append(target)
    netns.remove(name)
    return returned
