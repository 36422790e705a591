"""The `sriov` CNI on the simulated host: a simulator with VFs whose netdevs are real links, a handler
wired to it, pod namespaces, and a helper that runs one CNI command the way the server would."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyroute2 import IPRoute, netns

from sriovop.cni.plugin import sriov_handler
from sriovop.cni.server import CniRequest, CniResponse, Handler, ServerOptions
from sriovop.host.paths import HostPaths
from sriovop.sim.client import SimKernelIO
from sriovop.sim.host import SimHost
from sriovop.sim.vf_netdevs import wire_vf_netdevs
from sriovop.sim.vfkernel import SimVfKernel

HOST_LOCAL = ("/usr/lib/cni", "/opt/cni/bin")


def cni_path() -> str:
    return ":".join(d for d in HOST_LOCAL if Path(d, "host-local").is_file())


@dataclass
class CniSim:
    sim: SimHost
    handler: Handler
    state_dir: Path
    vfs: dict[str, str]  # VF PCI -> original netdev name
    namespaces: list[str] = field(default_factory=list)

    @property
    def root(self) -> Path:
        return self.sim.root

    @property
    def host_netns(self) -> str:
        return self.sim.netns

    def new_netns(self) -> str:
        name = f"cnipod-{uuid.uuid4().hex[:8]}"
        netns.create(name)
        self.namespaces.append(name)
        return name

    def call(self, command: str, conf: dict[str, Any], netns_name: str | None, ifname: str = "net1",
             container_id: str = "c1", args: str = "", open_netns: bool = True) -> CniResponse:
        env = {"CNI_COMMAND": command, "CNI_CONTAINERID": container_id, "CNI_IFNAME": ifname,
               "CNI_NETNS": f"/var/run/netns/{netns_name}" if netns_name else "", "CNI_PATH": cni_path()}
        if args:
            env["CNI_ARGS"] = args
        fd = None
        if netns_name and open_netns:
            try:
                fd = os.open(f"/var/run/netns/{netns_name}", os.O_RDONLY)
            except FileNotFoundError:
                fd = None
        try:
            return self.handler(CniRequest(plugin="sriov", env=env, stdin=json.dumps(conf).encode(), netns_fd=fd,
                                           peer_uid=0))
        finally:
            if fd is not None:
                os.close(fd)

    def host_links(self) -> dict[str, dict[str, Any]]:
        """Links in the simulated host's namespace by name: mac, mtu, alias, up."""
        with IPRoute(netns=self.sim.netns) as ipr:
            return {str(m.get_attr("IFLA_IFNAME")): {"mac": m.get_attr("IFLA_ADDRESS"), "mtu": m.get_attr("IFLA_MTU"),
                                                     "alias": m.get_attr("IFLA_IFALIAS"), "up": bool(m["flags"] & 1)}
                    for m in ipr.get_links()}

    def pod_links(self, name: str) -> dict[str, dict[str, Any]]:
        with IPRoute(netns=name) as ipr:
            out = {}
            for m in ipr.get_links():
                addrs = [f"{a.get_attr('IFA_ADDRESS')}/{a['prefixlen']}" for a in ipr.get_addr(index=m["index"])]
                out[str(m.get_attr("IFLA_IFNAME"))] = {"mac": m.get_attr("IFLA_ADDRESS"), "up": bool(m["flags"] & 1),
                                                       "alias": m.get_attr("IFLA_IFALIAS"), "addrs": addrs}
            return out

    def vf_config(self, pf_pci: str, index: int) -> dict[str, Any]:
        io = SimKernelIO(HostPaths.at(self.root), self.sim.address)
        try:
            return dict(io.request({"op": "get_vf_config", "pf": pf_pci, "vf": index}, 10.0)["config"])  # type: ignore[call-overload]
        finally:
            io.close()

    def drop_netdev(self, pci: str) -> None:
        """The VF's driver let go of it (e.g. vfio-pci took it): its netdev disappears."""
        with IPRoute(netns=self.sim.netns) as ipr:
            ipr.link("del", index=ipr.link_lookup(ifname=self.vfs.pop(pci))[0])

    def leftovers(self) -> list[str]:
        """Cache and allocation files left under the state dir."""
        return sorted(str(p.relative_to(self.state_dir)) for p in self.state_dir.rglob("*")
                      if p.is_file() and "vf_lock" not in p.parts)


def create_vfs(sim: SimHost, pf_index: int, count: int) -> None:
    pf = sim.pf(pf_index)
    sim.kernel.write(f"sys/bus/pci/devices/{pf.pci}/sriov_numvfs", str(count))


@contextmanager
def cni_sim(tmp_path: Path, nics: list[str], vfs: int = 4, **sim_args: Any) -> Iterator[CniSim]:
    """Simulated host (`nics`), `vfs` VFs on the first PF, each with a real netdev; the sriov handler."""
    sim = SimHost(tmp_path / "host", nics, **sim_args).start()
    env = None
    try:
        create_vfs(sim, 0, vfs)
        wired = wire_vf_netdevs(sim.root)
        state = tmp_path / "state"
        handler = sriov_handler(ServerOptions(host_root=sim.root, state_dir=state), kernel=SimVfKernel(sim.root))
        env = CniSim(sim=sim, handler=handler, state_dir=state, vfs=wired)
        yield env
    finally:
        if env is not None:
            for name in env.namespaces:
                try:
                    netns.remove(name)
                except OSError:
                    pass
        sim.stop()
