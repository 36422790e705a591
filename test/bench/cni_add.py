"""Benchmark: our `sriov` CNI ADD against the standard bridge plugin's ADD, on the same machine (JSON).

    .venv/bin/python test/bench/cni_add.py [--quick] [--rounds 15] [--out FILE]

Both sides are what a runtime execs: our static shim (talking to a `sriovop cni-server` process serving
a simulated host whose VF netdevs are real links) and containernetworking's `bridge` binary. Each round
gives each side a fresh network namespace, times its ADD (no IPAM on either side), then DELs untimed.
Interleaved ABAB after a warm-up round each; the statistic is the median on both sides.
Target: cni_add_ratio_over_bridge <= 1.5.

`--floor` adds a third side in the same rounds: what our ADD cannot avoid, each part timed on its own
and summed per round — the shim's exec and a round trip to the server (`VERSION`), the one RTM_SETLINK
that moves a real link into a fresh namespace with MAC, name and up (`sriovop.cni.rtnl`, as ADD sends
it), and the simulator's two PF-side round trips (read, and a write of the values read). Its figure
`cni_add_floor_ratio_over_bridge` says how close to the bridge plugin our design can get here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import benchlib
from benchlib import Figure, Stat
from pyroute2 import IPRoute, netns

from sriovop.cni.rtnl import rtnl_at
from sriovop.cni.vfkernel import VfChange
from sriovop.devcluster.images.cni_shim import shim_binary
from sriovop.sim.host import SimHost
from sriovop.sim.vf_netdevs import wire_vf_netdevs
from sriovop.sim.vfkernel import SimVfKernel

TARGET = 1.5
CNI_DIRS = ("/usr/lib/cni", "/opt/cni/bin")


def bridge_plugin() -> Path:
    for d in CNI_DIRS:
        if Path(d, "bridge").is_file():
            return Path(d, "bridge")
    raise SystemExit("the bridge CNI plugin is missing (hack/install-deps.sh installs containernetworking-plugins)")


def exec_plugin(binary: Path, command: str, conf: dict[str, object], ns: str, cid: str,
                extra_env: dict[str, str]) -> float:
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_IFNAME": "net1", "CNI_NETNS": f"/var/run/netns/{ns}",
           "CNI_PATH": ":".join(CNI_DIRS), "PATH": os.environ["PATH"], **extra_env}
    start = time.perf_counter()
    done = subprocess.run([str(binary)], input=json.dumps(conf).encode(), env=env, capture_output=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{binary.name} {command} failed: {done.stdout.decode()} {done.stderr.decode()}")
    return seconds


def floor_side(root: Path, vf_pci: str, shim: Path, conf: dict[str, object], env: dict[str, str],
               created: list[str], parts: dict[str, list[float]]) -> Callable[[], float]:
    """One round of the floor (module docstring): returns the sum of its three timed parts."""
    kernel = SimVfKernel(root)
    pf_pci = Path(root, "sys/bus/pci/devices", vf_pci, "physfn").resolve().name
    sim_ns = kernel.host_netns.rsplit("/", 1)[1]

    def once() -> float:
        ns = f"cnif-{uuid.uuid4().hex[:8]}"
        netns.create(ns)
        created.append(ns)
        try:
            with IPRoute(netns=sim_ns) as ipr:
                ipr.link("add", ifname="cnifloor0", kind="veth", peer={"ifname": "cnifloor1"})
                [index] = ipr.link_lookup(ifname="cnifloor0")
            shim_s = exec_plugin(shim, "VERSION", conf, ns, uuid.uuid4().hex[:12], env)
            fd = os.open(f"/var/run/netns/{ns}", os.O_RDONLY | os.O_CLOEXEC)
            try:
                with rtnl_at(kernel.host_netns) as (nl, _fd):
                    start = time.perf_counter()
                    nl.set_link(index, net_ns_fd=fd, new_ifindex=index, address="02:00:00:00:be:02",
                                ifname="net1", up=True)
                    move_s = time.perf_counter() - start
            finally:
                os.close(fd)
            start = time.perf_counter()
            now = kernel.vf_config("", pf_pci, 0)
            kernel.set_vf("", pf_pci, 0, VfChange(admin_mac=now.admin_mac, vlan=(now.vlan, now.vlan_qos,
                                                                                 now.vlan_proto)))
            sim_s = time.perf_counter() - start
        finally:
            netns.remove(ns)  # takes the moved link and, with it, its peer
            created.remove(ns)
        for name, value in (("shim_version", shim_s), ("move", move_s), ("simulator", sim_s)):
            parts[name].append(value)
        return shim_s + move_s + sim_s
    return once


def main() -> None:
    parser = benchlib.arg_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--floor", action="store_true", help="also time what our ADD cannot avoid (see above)")
    args = parser.parse_args()
    started = benchlib.machine()
    rounds = 3 if args.quick else args.rounds
    work = Path(tempfile.mkdtemp(prefix="cni-bench-"))
    sim = SimHost(work / "host", ["xxv710:1"]).start()
    server = None
    created: list[str] = []
    parts: dict[str, list[float]] = {"shim_version": [], "move": [], "simulator": []}
    try:
        sim.kernel.write(f"sys/bus/pci/devices/{sim.pf(0).pci}/sriov_numvfs", "1")
        [vf_pci] = wire_vf_netdevs(sim.root)
        sockets = work / "sock"
        server = subprocess.Popen([sys.executable, "-m", "sriovop.cli", "cni-server", "--socket-dir", str(sockets),
                                   "--plugins", "sriov", "--host-root", str(sim.root), "--state-dir",
                                   str(work / "state"), "--simulated-host", "--log-level", "warning"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not (sockets / "sriov.sock").exists():
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("sriovop cni-server did not start")
            time.sleep(0.05)
        bin_dir = work / "bin"
        bin_dir.mkdir()
        shutil.copy(shim_binary(), bin_dir / "sriov")
        shim_env = {"SRIOVOP_CNI_SOCKET_DIR": str(sockets)}
        sriov_conf = {"cniVersion": "1.0.0", "name": "bench-sriov", "type": "sriov", "deviceID": vf_pci, "vlan": 10,
                      "mac": "02:00:00:00:be:01"}
        bridge_conf = {"cniVersion": "1.0.0", "name": "bench-bridge", "type": "bridge", "bridge": "cnibench0"}

        def side(binary: Path, conf: dict[str, object], env: dict[str, str]) -> Callable[[], float]:
            def once() -> float:
                ns = f"cnib-{uuid.uuid4().hex[:8]}"
                netns.create(ns)
                created.append(ns)
                cid = uuid.uuid4().hex[:12]
                try:
                    return exec_plugin(binary, "ADD", conf, ns, cid, env)
                finally:
                    exec_plugin(binary, "DEL", conf, ns, cid, env)
                    netns.remove(ns)
                    created.remove(ns)
            return once

        sides = {"sriov": side(bin_dir / "sriov", sriov_conf, shim_env),
                 "bridge": side(bridge_plugin(), bridge_conf, {})}
        if args.floor:
            sides["floor"] = floor_side(sim.root, vf_pci, bin_dir / "sriov", sriov_conf, shim_env, created, parts)
        samples = benchlib.interleave(sides, rounds)
    finally:
        for ns in created:
            try:
                netns.remove(ns)
            except OSError:
                pass
        if server is not None:
            server.terminate()
            server.wait(30)
        sim.stop()
        with IPRoute() as ipr:
            for index in ipr.link_lookup(ifname="cnibench0"):
                ipr.link("del", index=index)
        shutil.rmtree(work, ignore_errors=True)
    ours, bridge = Stat.of(samples["sriov"]), Stat.of(samples["bridge"])
    ratio = round(ours.median / bridge.median, 3)
    figures = [Figure("cni_add_ratio_over_bridge", ratio, "x", baseline=round(bridge.median * 1000, 2),
                      baseline_what="bridge plugin ADD, ms (median, same machine, interleaved)",
                      target=TARGET, target_what="<= 1.5 x the bridge plugin's ADD",
                      note=f"sriov ADD through the static shim and sriovop cni-server, simulated host with real "
                           f"VF netdevs, no IPAM on either side; median of {rounds}")]
    details: dict[str, object] = {"rounds": rounds, "sriov_add_ms": ours.scaled(1000, 2),
                                  "bridge_add_ms": bridge.scaled(1000, 2)}
    if args.floor:
        floor = Stat.of(samples["floor"])
        figures.append(Figure("cni_add_floor_ratio_over_bridge", round(floor.median / bridge.median, 3), "x",
                              baseline=round(bridge.median * 1000, 2),
                              baseline_what="bridge plugin ADD, ms (median, same rounds)",
                              note="shim exec + server round trip, the one move request, the simulator's "
                                   f"two round trips, summed per round; median of {rounds}"))
        details["floor_ms"] = floor.scaled(1000, 2)
        details["floor_parts_ms"] = {k: Stat.of(v[-rounds:]).scaled(1000, 2) for k, v in parts.items()}
    benchlib.emit("cni_add", figures, details, args.out, started)


if __name__ == "__main__":
    main()
