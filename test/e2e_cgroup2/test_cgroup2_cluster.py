"""`sriovop dev cluster up --nodes 1` and `down` on a cgroup v2 kernel: the QEMU guest (TCG).

Run by `make e2e-cgroup2`, not by `make test`: a whole control plane and a kubelet under TCG take
10-15 minutes on a busy 2-core machine.

This machine's host is cgroup v1, where the rest of the suite runs its clusters; the guest mounts a
unified hierarchy, so the cgroup v2 path of the dev cluster (the node's cgroup root with its controllers,
kubelet and runc on the cgroupfs driver) runs for real there. One boot runs
test/support/vm_cgroup2_cluster.py, which brings the cluster up with the same command users run, runs a
pod, checks where its processes are accounted, brings the cluster down and checks nothing is left.
Host: the QEMU guest (no igb PF is needed), not the simulated SR-IOV host.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from test.support.vm_guest import GuestVM, ensure_setup

#: A whole control plane, containerd and a kubelet under TCG on a busy 2-core host: a deadline only.
GUEST_TIMEOUT_S = 2400
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(GUEST_TIMEOUT_S + 300)]

SCRIPT = "test.support.vm_cgroup2_cluster"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def outcome() -> dict[str, Any]:
    ensure_setup()
    # TCG runs the control plane several times slower than the host: stretch the start-up deadlines.
    env = {"PYTHONPATH": str(REPO), "HOME": str(Path.home()), "SRIOVOP_DEV_TIMEOUT_SCALE": "6"}
    if os.environ.get("XDG_CACHE_HOME"):
        env["XDG_CACHE_HOME"] = os.environ["XDG_CACHE_HOME"]
    vm = GuestVM(igb=0, mem_mb=4096, env=env, hostname="sriovop-cgroup2")
    guest = vm.start_kubelet_host(f"cd {REPO} && exec {sys.executable} -m {SCRIPT}", timeout=GUEST_TIMEOUT_S)
    rc, console = guest.wait(GUEST_TIMEOUT_S + 30)
    lines = [ln for ln in guest.output.splitlines() if ln.startswith("SRIOVOP-RESULT ")]
    assert lines, f"no result line (rc {rc})\n{console[-6000:]}\n{guest.progress[-2000:]}"
    result: dict[str, Any] = json.loads(lines[-1].removeprefix("SRIOVOP-RESULT "))
    result["rc"] = rc
    result["console_tail"] = console[-4000:]
    print(f"cgroup2 cluster: up {result.get('up_s')} s, pod {result.get('pod_s')} s, down {result.get('down_s')} s")
    return result


def test_a_one_node_cluster_comes_up_runs_a_pod_and_goes_down_on_cgroup_v2(outcome: dict[str, Any]) -> None:
    assert outcome["passed"] and outcome["rc"] == 0, f"{outcome.get('error')}\n{outcome['console_tail']}"
    assert outcome["is_v2"] is True
    assert {"cpu", "memory", "pids"} <= set(outcome["node_cgroup_subtree_control"]), outcome
    assert outcome["pause_pids_in_node_cgroup"] >= 1, outcome
