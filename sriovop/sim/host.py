"""A simulated SR-IOV host: a sysfs tree under a root, a network namespace with one veth per PF, and
a simulated kernel answering writes over a unix socket.

Usage (in-process, e.g. a test that runs the host layer itself):

    with SimHost(tmp_path / "host", ["xxv710", "e810:1"]) as sim:
        host = Host(sim.root, kernel=sim.access)   # the host layer's KernelAccess for this simulator
        host.discover()

Usage (separate process, e.g. a daemon under test that gets killed and restarted):

    python -m sriovop.sim serve --root /tmp/h --nic xxv710 --nic cx6dx
    # prints {"root":..., "netns":..., "pfs":[...]} on stdout once ready; SIGTERM cleans up.
    sriovop config-daemon --host-root /tmp/h --simulated-host ...

Any process can inject faults through `SimControl(root).fault(pf, enomem=True)` (sim/control.py).
"""

from __future__ import annotations

import atexit
import os
import shutil
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyroute2 import IPRoute, netns

from sriovop.host.netns_nofork import create_named
from sriovop.sim.access import SimKernelAccess
from sriovop.sim.devices import SimPf
from sriovop.sim.endpoint import SIM_DIR, remove_endpoint, write_endpoint
from sriovop.sim.kernel import SimKernel
from sriovop.sim.models import MODELS
from sriovop.sim.server import SimServer
from sriovop.sim.system import BOOT_LOADERS, next_cmdline, write_boot_config
from sriovop.sim.tree import mac_for, rid_to_pci, symlink, write

DEFAULT_CMDLINE = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet"


def parse_nic(spec: str) -> tuple[str, int | None]:
    """`"xxv710"` or `"xxv710:1"` (ports)."""
    key, _, ports = spec.partition(":")
    if key not in MODELS:
        raise ValueError(f"unknown NIC model {key!r}; known: {', '.join(sorted(MODELS))}")
    return key, (int(ports) if ports else None)


class SimHost:
    def __init__(
        self,
        root: str | Path,
        nics: Sequence[str],
        *,
        cmdline: str = DEFAULT_CMDLINE,
        cpu_vendor: str = "GenuineIntel",
        netns_name: str | None = None,
        boot_loader: str = "bls",
        modules: Sequence[str] = (),
        unavailable_modules: Sequence[str] = (),
        pf_names: Sequence[str] = (),
    ) -> None:
        if boot_loader not in BOOT_LOADERS:
            raise ValueError(f"boot_loader: {boot_loader!r} is not one of {', '.join(BOOT_LOADERS)}")
        self.root = Path(root).absolute()
        self.nic_specs = [parse_nic(n) for n in nics]
        self.cmdline = cmdline
        #: bls / grub (the host's boot configuration kind), none, or broken (ignores its configuration).
        self.boot_loader = boot_loader
        #: Loaded at every boot (e.g. ib_core), and modules `modprobe` cannot find.
        self.modules = tuple(modules)
        self.unavailable_modules = tuple(unavailable_modules)
        #: PF netdev names in creation order, replacing the default ens<nic>f<port> (hosts of a fleet
        #: whose PFs are named differently); fewer names than ports keep the default for the rest.
        self.pf_names = tuple(pf_names)
        self.boots = 0
        self.cpu_vendor = cpu_vendor
        self.id = uuid.uuid4().hex[:10]
        self.netns = netns_name or f"sriovop-sim-{self.id}"
        self.address = f"@sriovop-sim-{self.id}"
        self._ipr: IPRoute | None = None
        self._ipr_lock = threading.Lock()
        self._started = False
        self._fresh_kernel()

    def _fresh_kernel(self) -> None:
        self.kernel = SimKernel(self.root)
        self.kernel.on_vanish = self._drop_veth
        self.server = SimServer(self.kernel, self.address)
        self.pfs: list[SimPf] = []

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> SimHost:
        """Build the kernel side from scratch (sysfs, /proc, netns); files elsewhere under the root,
        such as the operator's state dir, are kept, so stop() + start() behaves like a reboot."""
        self.root.mkdir(parents=True, exist_ok=True)
        for rel in ("sys", "proc", SIM_DIR):
            shutil.rmtree(self.root / rel, ignore_errors=True)
        self.kernel.base_tree()
        write(self.root / "proc/cmdline", self.cmdline)
        write(self.root / "proc/cpuinfo", f"processor\t: 0\nvendor_id\t: {self.cpu_vendor}\n")
        write_boot_config(self.root, "bls" if self.boot_loader == "broken" else self.boot_loader, self.cmdline)
        self.kernel.system.boot(self.cmdline, self.modules, self.unavailable_modules)
        self.boots += 1
        create_named(self.netns)
        self._started = True
        atexit.register(self.stop)  # never leak the namespace, even when a test forgets stop()
        try:
            self._ipr = IPRoute(netns=self.netns)
            for i, (key, ports) in enumerate(self.nic_specs):
                self._add_nic(i, key, ports)
            self.server.start()
            write_endpoint(self.root, self.address, self.netns)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        atexit.unregister(self.stop)
        self.server.stop()
        with self.kernel.lock:
            for pf in self.kernel.pfs.values():
                if pf.timer is not None:
                    pf.timer.cancel()
        if self._ipr is not None:
            self._ipr.close()
            self._ipr = None
        try:
            netns.remove(self.netns)
        except OSError:
            pass
        remove_endpoint(self.root)

    def reboot(self, *, add_kernel_args: Sequence[str] = ()) -> SimHost:
        """Power-cycle: VFs, driver overrides, MTUs and loaded modules are gone, files under the root
        (operator state, boot configuration) stay. The new /proc/cmdline is what the boot loader reads
        from the boot configuration (unchanged with a broken boot loader), plus `add_kernel_args` (an
        administrator typing them at the boot prompt). The simulator gets a new socket and namespace:
        processes must build a new Host, as after a real reboot."""
        self.stop()
        cmdline = next_cmdline(self.root, self.boot_loader, self.cmdline)
        args = [a for a in add_kernel_args if a not in cmdline.split()]
        self.cmdline = " ".join([cmdline, *args])
        self.id = uuid.uuid4().hex[:10]
        self.netns = f"sriovop-sim-{self.id}"
        self.address = f"@sriovop-sim-{self.id}"
        self._fresh_kernel()
        return self.start()

    def __enter__(self) -> SimHost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- building ------------------------------------------------------------------------------
    def _add_nic(self, i: int, key: str, ports: int | None) -> None:
        model = MODELS[key]
        bus = 0x18 + 0x10 * i
        for port in range(ports or model.ports):
            pci = rid_to_pci((bus << 8) | port)
            ifname = f"ens{i + 1}f{port}"
            if len(self.pfs) < len(self.pf_names):
                ifname = self.pf_names[len(self.pfs)]
            alt = f"enp{bus}s0f{port}" + (f"np{port}" if model.vendor == "15b3" else "")
            pf = SimPf(pci=pci, model=model, port=port, ifname=ifname, alt_name=alt, mac=mac_for(pci))
            self._add_veth(pf, f"sim{i}p{port}")
            self.kernel.add_pf(pf)
            self.pfs.append(pf)

    def _add_veth(self, pf: SimPf, peer: str) -> None:
        assert self._ipr is not None
        with self._ipr_lock:
            self._ipr.link("add", ifname=pf.ifname, kind="veth", peer={"ifname": peer})
            idx = self._ipr.link_lookup(ifname=pf.ifname)[0]
            self._ipr.link("set", index=idx, address=pf.mac, mtu=1500)
            self._ipr.link("property_add", index=idx, altname=pf.alt_name)
            peer_idx = self._ipr.link_lookup(ifname=peer)[0]
            self._ipr.link("set", index=peer_idx, state="up")

    def _drop_veth(self, pf: SimPf) -> None:
        if self._ipr is None:
            return
        with self._ipr_lock:
            idx = self._ipr.link_lookup(ifname=pf.ifname)
            if idx:
                self._ipr.link("del", index=idx[0])

    def add_extra_netdev(self, pf_pci: str, name: str, phys_port_name: str) -> None:
        """A second netdev on one PCI function (e.g. a representor); only in sysfs."""
        net = self.kernel.dev_dir(pf_pci) / "net" / name
        write(net / "phys_port_name", phys_port_name)
        write(net / "type", "1")
        write(net / "address", mac_for(name))
        write(net / "mtu", "1500")
        write(net / "flags", "0x1002")
        symlink(os.path.relpath(net, self.root / "sys/class/net"), self.root / "sys/class/net" / name)

    # --- conveniences --------------------------------------------------------------------------
    @property
    def access(self) -> SimKernelAccess:
        """The host layer's `KernelAccess` for this simulator (`Host(sim.root, kernel=sim.access)`)."""
        return SimKernelAccess(self.root)

    def pf(self, index: int) -> SimPf:
        return self.pfs[index]

    def fault(self, pf_pci: str, **values: Any) -> None:
        self.kernel.fault(pf_pci, values)

    def system_fault(self, **values: Any) -> None:
        """Host-wide faults: unavailable_modules=[...], rdma_netns_busy=True."""
        with self.kernel.lock:
            self.kernel.system.fault(values)

    def describe(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "netns": self.netns,
            "socket": self.address,
            "pfs": [{"pciAddress": p.pci, "name": p.ifname, "model": p.model.key, "totalvfs": p.model.totalvfs}
                    for p in self.pfs],
        }
