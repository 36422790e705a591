"""Remove everything a cluster with nodes put on the host, from its directory and cluster.json alone.

The supervisor calls it after stopping its processes; `down` calls it again after killing a supervisor
that did not stop in time (or was SIGKILLed), so every step is idempotent and relies on no live process.
What a node leaves when its processes are gone, and how each is found:
- containerd shims (they re-parent themselves and outlive containerd): by the `-address` of their node's
  socket in their command line; containers left behind: by the node's cgroup tree.
- mounts (overlay rootfs, pod network namespaces, kubelet volumes and its rshared root bind): by
  mount point under the cluster directory, removed deepest first with a lazy unmount.
- the node bridges (and any veth still attached to one), the cluster's Service chains, the cgroups,
  the address-slot claim.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path

import structlog
from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from sriovop.devcluster import addressing, cgroups, serviceproxy
from sriovop.devcluster.addressing import ClusterNetwork

log = structlog.get_logger("devcluster.teardown")

_MNT_DETACH = 2
STATE_FILE = "cluster.json"


def cgroup_name(net: ClusterNetwork, node: str) -> str:
    return f"{net.tag}-{node}"


def load_network(directory: Path) -> ClusterNetwork | None:
    try:
        return ClusterNetwork.from_json(json.loads((directory / STATE_FILE).read_text()))
    except FileNotFoundError:
        return None


def shim_pids(socket: Path) -> list[int]:
    """containerd-shim processes serving the containerd at `socket`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if argv and b"containerd-shim" in argv[0] and str(socket).encode() in argv:
            pids.append(int(entry.name))
    return pids


def mounts_under(directory: Path) -> list[str]:
    """Mount points at or below `directory`, deepest (and most recently stacked) first."""
    prefix = str(directory).rstrip("/") + "/"
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefix) or point == prefix.rstrip("/"):
            points.append(point)
    return sorted(points, key=lambda p: p.count("/"), reverse=True)


def unmount_all(directory: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for _ in range(10):  # stacked mounts reappear underneath; a few passes clear any depth seen here
        points = mounts_under(directory)
        if not points:
            return
        for point in points:
            if libc.umount2(point.encode(), _MNT_DETACH) != 0:
                log.debug("umount failed", point=point, errno=ctypes.get_errno())
    left = mounts_under(directory)
    if left:
        raise RuntimeError(f"mounts left under {directory}: {left}")


def _delete_link(ipr: IPRoute, index: int) -> None:
    try:
        ipr.link("del", index=index)
    except NetlinkError as exc:
        # a pod's veth disappears by itself once its network namespace is freed, which the kernel
        # does asynchronously after the last pod process and the namespace's mount are gone
        if exc.code != errno.ENODEV:
            raise


def delete_bridges(names: list[str]) -> None:
    with IPRoute() as ipr:
        for name in names:
            found = ipr.link_lookup(ifname=name)
            if not found:
                continue
            for link in ipr.get_links():
                if link.get_attr("IFLA_MASTER") == found[0]:
                    _delete_link(ipr, link["index"])
            _delete_link(ipr, found[0])


def bridges_left(names: list[str]) -> list[str]:
    with IPRoute() as ipr:
        return [n for n in names if ipr.link_lookup(ifname=n)]


def veths_on(names: list[str]) -> list[str]:
    """Interfaces still enslaved to one of the bridges (pod veths)."""
    with IPRoute() as ipr:
        masters = {i for n in names for i in ipr.link_lookup(ifname=n)}
        return [str(link.get_attr("IFLA_IFNAME")) for link in ipr.get_links()
                if link.get_attr("IFLA_MASTER") in masters]


def remove_pods(crictl: Path | None, socket: Path) -> None:
    """Stop and remove every pod sandbox while containerd still runs: CNI DEL frees IPs and veths."""
    if crictl is None or not socket.exists():
        return
    subprocess.run(
        [str(crictl), "--runtime-endpoint", f"unix://{socket}", "--timeout", "60s", "rmp", "--all", "--force"],
        capture_output=True, check=False, timeout=180,
    )


def cleanup(directory: Path) -> None:
    """Remove every host object of the cluster in `directory`; safe to call any number of times.

    Every step runs even when an earlier one failed (a leftover of one kind must not keep the others
    in place); the failures are raised together at the end. Cgroups, bridges and chains are named after
    the address slot, so they are only touched while the slot is still this directory's: the slot is
    released last, after everything else is gone, and may then belong to another cluster at once.
    Success removes cluster.json, so a second call does nothing.
    """
    net = load_network(directory)
    if net is None:
        return
    slot_owner = addressing.claim_owner(net.slot)
    ours = slot_owner in (None, str(directory))
    sockets = [directory / "nodes" / node.name / "containerd.sock" for node in net.nodes]
    steps: list[tuple[str, Callable[[], None]]] = [
        ("kill containerd shims", lambda: _kill([p for s in sockets for p in shim_pids(s)])),
    ]
    if ours:
        steps += [(f"remove cgroup of {n.name}", partial(cgroups.remove, cgroup_name(net, n.name))) for n in net.nodes]
    steps.append(("unmount", partial(unmount_all, directory)))
    if ours:
        steps += [
            ("delete bridges", partial(delete_bridges, [n.bridge for n in net.nodes])),
            ("remove Service chains", partial(serviceproxy.uninstall, net.tag, str(net.service_range))),
        ]
    failures = []
    for what, step in steps:
        try:
            step()
        except Exception as exc:  # reported below, after the remaining steps ran
            failures.append(f"{what}: {exc}")
    if failures:
        raise RuntimeError(f"cleanup of {directory} incomplete: " + "; ".join(failures))
    if ours:
        addressing.release(directory, net.slot)
    (directory / STATE_FILE).unlink(missing_ok=True)
    log.debug("cluster host objects removed", dir=str(directory))


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
