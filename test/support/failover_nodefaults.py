"""The host side of the in-cluster faults: a node's kubelet process and the processes of its containers.

A node of `sriovop dev cluster` is a kubelet and a containerd on this machine. "The kubelet stopped" is
SIGSTOP of that kubelet (SIGCONT brings it back): the dev cluster's supervisor treats a kubelet that
exits as a broken cluster, while a stopped one looks to the API server exactly like a dead one (no
node status, no node Lease renewal) and leaves the containers running under containerd, as stopping
the kubelet service on a real node does. "The node is lost" also stops every container process of the
node (SIGSTOP of each process in the containers' cgroups), as a frozen or partitioned machine would.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from test.support.crictl import CrictlError, crictl


def kubelet_pid(cluster_dir: Path, node: str) -> int:
    """The pid of the node's kubelet (its command line names the node's own kubelet.yaml)."""
    config = f"--config={cluster_dir / 'nodes' / node / 'kubelet.yaml'}"
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if config.encode() in argv:
            return int(entry.name)
    raise RuntimeError(f"no kubelet process of {node} (looked for {config})")


def container_pids(socket: Path) -> list[int]:
    """Every process of every running container of one node (each container's cgroup lists them)."""
    pids: set[int] = set()
    for cid in crictl(socket, "ps", "-q").split():
        try:
            init = int(json.loads(crictl(socket, "inspect", cid))["info"]["pid"])
        except (CrictlError, KeyError, ValueError):
            continue  # exited meanwhile
        pids.add(init)
        pids.update(_cgroup_peers(init))
    return sorted(pids)


def _cgroup_peers(pid: int) -> set[int]:
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return set()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers in ("pids", ""):  # the pids controller (v1) or the unified hierarchy (v2)
            root = Path("/sys/fs/cgroup") / ("pids" if controllers == "pids" else "")
            procs = root / path.lstrip("/") / "cgroup.procs"
            try:
                return {int(p) for p in procs.read_text().split()}
            except OSError:
                return set()
    return set()


def signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def alive(pid: int) -> bool:
    """False once the process is gone or a zombie (a container's init is reaped by its shim)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
