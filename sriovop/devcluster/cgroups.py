"""A kubelet's cgroup root on cgroup v1 or v2, and its removal.

Each node gets its own top-level cgroup (the kubelet's `cgroupRoot`), so its pods are accounted and
killed apart from other nodes and from the host. The kubelet checks that the root exists before it
starts; `down` kills whatever is left inside and removes the tree bottom-up (a cgroup directory can only
be removed once it has no processes and no children).
"""

from __future__ import annotations

import errno
import os
import signal
import time
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")
_V2_CONTROLLERS = ("cpuset", "cpu", "io", "memory", "hugetlb", "pids")


def is_v2(root: Path = CGROUP_FS) -> bool:
    """A unified hierarchy mounted at /sys/fs/cgroup (a hybrid host with v1 controllers counts as v1)."""
    return (root / "cgroup.controllers").exists()


def hierarchies(root: Path = CGROUP_FS) -> list[Path]:
    """Every mounted hierarchy a node's tree lives in: the unified root on v2, each v1 mount otherwise."""
    if is_v2(root):
        return [root]
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        sep = fields.index("-")
        fstype, mount_point = fields[sep + 1], Path(fields[4])
        if fstype == "cgroup" and mount_point.parent == root:
            found.append(mount_point)
    return sorted(found)


def create(name: str, root: Path = CGROUP_FS) -> None:
    """Create /<name> in every hierarchy, ready for the kubelet's cgroupfs driver."""
    for base in hierarchies(root):
        path = base / name
        path.mkdir(exist_ok=True)
        if (base / "cpuset.cpus").exists() and not is_v2(root):
            # a new v1 cpuset starts with no CPUs and no memory nodes: nothing could run in it
            for knob in ("cpuset.cpus", "cpuset.mems"):
                if not (path / knob).read_text().strip():
                    (path / knob).write_text((base / knob).read_text())
    if is_v2(root):
        available = set((root / "cgroup.controllers").read_text().split())
        wanted = [c for c in _V2_CONTROLLERS if c in available]
        for parent in (root, root / name):
            enabled = set((parent / "cgroup.subtree_control").read_text().split())
            missing = " ".join(f"+{c}" for c in wanted if c not in enabled)
            if missing:
                (parent / "cgroup.subtree_control").write_text(missing)


def _tree(top: Path) -> list[Path]:
    """Every cgroup directory under `top`, deepest first. The runtime may remove cgroups while we walk,
    and os.walk skips a directory that vanished (pathlib's rglob raises)."""
    return [Path(root) for root, _dirs, _files in os.walk(top, topdown=False)]


def _procs(path: Path) -> list[int]:
    pids: list[int] = []
    for directory in _tree(path):
        try:
            pids.extend(int(p) for p in (directory / "cgroup.procs").read_text().split())
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return pids


def remaining(name: str, root: Path = CGROUP_FS) -> list[Path]:
    """The node's cgroup directories still present (an empty list after a clean removal)."""
    return [base / name for base in hierarchies(root) if (base / name).exists()]


def remove(name: str, root: Path = CGROUP_FS, timeout: float = 30.0) -> None:
    """SIGKILL every process left in the tree, then remove it bottom-up, retrying while tasks exit."""
    deadline = time.monotonic() + timeout
    for base in hierarchies(root):
        top = base / name
        if not top.exists():
            continue
        while True:
            for pid in _procs(top):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            busy = False
            for directory in _tree(top):
                try:
                    directory.rmdir()
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    if exc.errno not in (errno.EBUSY, errno.ENOTEMPTY):
                        raise
                    busy = True
            if not busy:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"cgroup {top} still busy after {timeout:.0f}s (pids {_procs(top)})")
            time.sleep(0.1)
