"""Real netdevs for the simulated host's VFs, and a pod namespace's death as the kernel handles a VF.

The simulator's VF netdevs exist only in its sysfs tree, so `wire_vf_netdevs` gives each one a real
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

from pyroute2 import IPRoute, netns
from pyroute2.netlink.exceptions import NetlinkError

from sriovop.sim.vfkernel import NETNS_DIR, alias, running_endpoint


def wire_vf_netdevs(root: Path) -> dict[str, str]:
    """A real netdev for every simulated VF that has one in sysfs; returns PCI address → name."""
    info = running_endpoint(root)
    wired: dict[str, str] = {}
    devices = Path(root) / "sys/bus/pci/devices"
    with IPRoute(netns=info["netns"]) as ipr:
        existing = {alias(m) for m in ipr.get_links()}
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
    info = running_endpoint(root)
    returned: list[str] = []
    with IPRoute(netns=name) as pod, IPRoute(netns=info["netns"]) as host:
        taken = {str(m.get_attr("IFLA_IFNAME")) for m in host.get_links()}
        for msg in pod.get_links():
            if alias(msg).count(":") != 2:
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
