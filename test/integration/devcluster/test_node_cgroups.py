"""A node's cgroup root: created in every hierarchy, and `remove` kills what is left and deletes it.

Host: this machine's real cgroup filesystems (v1 hierarchies under /sys/fs/cgroup, and the cgroup2
mount at /sys/fs/cgroup/unified, which stands in for a cgroup v2 host's root), not the simulated
SR-IOV host nor the QEMU guest.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from sriovop.devcluster import cgroups
from sriovop.devcluster.process import pid_alive

UNIFIED = Path("/sys/fs/cgroup/unified")


def _sleeper_in(path: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["sleep", "600"])
    (path / "cgroup.procs").write_text(str(proc.pid))
    return proc


@pytest.mark.parametrize("root", [cgroups.CGROUP_FS, UNIFIED], ids=["v1-hierarchies", "cgroup2"])
def test_create_then_remove_kills_leftovers_and_deletes_the_tree(root: Path) -> None:
    name = f"sriovop-test-{uuid.uuid4().hex[:8]}"
    assert cgroups.is_v2(root) == (root == UNIFIED)
    cgroups.create(name, root)
    made = cgroups.remaining(name, root)
    try:
        assert made == [base / name for base in cgroups.hierarchies(root)] and made
        if root == cgroups.CGROUP_FS:
            cpuset = next(p for p in made if p.parent.name == "cpuset")
            assert (cpuset / "cpuset.cpus").read_text().strip(), "a v1 cpuset child needs CPUs to run anything"
        child = made[-1] / "kubepods" / "pod1"
        child.mkdir(parents=True)
        procs = [_sleeper_in(child), _sleeper_in(child)]
        cgroups.remove(name, root)
        for proc in procs:
            proc.wait(timeout=30)
        assert not any(pid_alive(p.pid) for p in procs)
        assert cgroups.remaining(name, root) == []
    finally:
        cgroups.remove(name, root)
