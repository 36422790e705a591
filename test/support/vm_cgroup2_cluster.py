"""Runs inside the QEMU guest: `sriovop dev cluster up --nodes 1` and `down` on a cgroup v2 kernel.

This machine's host is cgroup v1, so the unified-hierarchy path of sriovop/devcluster/cgroups.py (a
node's cgroup root in /sys/fs/cgroup with the controllers enabled for its subtree, the kubelet and runc
on the cgroupfs driver under it) can only run for real in the guest. The guest sees the host's root
(python, the venv, the repository, the cached binaries and images) over 9p, with fresh tmpfs on /tmp.
After hack/vm/kernel-prep.sh (a cgroup v2 hierarchy, modules), the script brings a one-node cluster
up with the same command users run, runs a pod, checks that the pod's processes sit in the node's
cgroup, brings the cluster down and checks that nothing of it is left. It prints
`SRIOVOP-RESULT <json>` and exits non-zero on any failure.
Host: the QEMU guest (TCG), not the simulated SR-IOV host.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

from sriovop.devcluster import cgroups, process, teardown
from sriovop.devcluster.addressing import ClusterNetwork
from sriovop.runtime.kinds import POD, SERVICE_ACCOUNT
from test.support.cluster import pids_in, pod_on, running_pod
from test.support.controllers_harness import client_for
from test.support.poll import wait_for

#: A tmpfs of its own (mounted by prepare_kernel), with the cluster directory inside it: `down` unmounts
#: everything at or below the cluster directory, and must not take the directory's own filesystem with it.
SCRATCH = Path("/tmp/cgroup2")
CLUSTER_DIR = SCRATCH / "cluster"
#: TCG runs everything several times slower than the host; these are deadlines, not expectations.
UP_TIMEOUT_S = 1500
POD_TIMEOUT_S = 600

#: The job share: a host directory, so progress can be read from outside while the guest runs.
JOB = Path("/run/job")
STARTED = time.monotonic()


def say(message: str) -> None:
    line = f"SRIOVOP-CGROUP2 {time.monotonic() - STARTED:7.1f}s: {message}"
    print(line, flush=True)
    with open(JOB / "progress.log", "a") as progress:
        progress.write(line + "\n")


def prepare_kernel() -> list[str]:
    """After hack/vm/kernel-prep.sh (sourced by the guest's command: the cgroup v2 hierarchy, shared
    mounts, modules), the scratch tmpfs; → the controllers the root delegates."""
    # containerd's overlayfs snapshots need a plain filesystem: an upper directory on the guest's root
    # overlay is refused (EINVAL), so the cluster directory lives on a tmpfs of its own.
    SCRATCH.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "cgroup2-scratch", str(SCRATCH)], check=True)
    return (cgroups.CGROUP_FS / "cgroup.controllers").read_text().split()


def sriovop(*args: str, timeout: float) -> str:
    # stderr (the supervisor's progress) goes to the job share as it comes
    with open(JOB / f"{args[0]}.log", "w") as err:
        done = subprocess.run([sys.executable, "-m", "sriovop.cli", "dev", "cluster", *args, "--dir", str(CLUSTER_DIR)],
                              stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dev cluster {args[0]} failed ({done.returncode}):\n{done.stdout}\n"
                           f"{(JOB / f'{args[0]}.log').read_text()[-3000:]}\n"
                           f"supervisor, its own lines:\n{supervisor_lines()}")
    return done.stdout


def supervisor_lines() -> str:
    """The supervisor's own log lines (the daemons' klog lines, which start with I/W/E and a date, drowned them)."""
    log = CLUSTER_DIR / "supervisor.log"
    if not log.exists():
        return "(no supervisor.log)"
    own = [ln for ln in log.read_text(errors="replace").splitlines() if not re.match(r"[IWEF]\d{4} ", ln)]
    return "\n".join(own[-60:])


def diagnostics() -> str:
    """What a failed step leaves to read: the pods as kubectl sees them and each node's kubelet log tail."""
    parts = []
    kubeconfig = CLUSTER_DIR / "kubeconfig"
    if kubeconfig.exists():
        kubectl = Path(sys.executable).parent / "kubectl"
        for args in (["get", "pods", "-A", "-o", "wide"], ["get", "events", "-A"]):
            done = subprocess.run([str(kubectl), f"--kubeconfig={kubeconfig}", *args], capture_output=True,
                                  text=True, timeout=120, check=False)
            parts.append(f"$ kubectl {' '.join(args)}\n{done.stdout[-3000:]}{done.stderr[-1000:]}")
    for log in [CLUSTER_DIR / "kube-controller-manager.log", *sorted(CLUSTER_DIR.glob("nodes/*/*.log"))]:
        if log.exists():
            parts.append(f"--- {log} ---\n" + "\n".join(log.read_text(errors="replace").splitlines()[-25:]))
    text = "\n".join(parts)
    (JOB / "diagnostics.log").write_text(text)
    return text[-8000:]


def main() -> int:
    result: dict[str, object] = {"passed": False}
    try:
        result["controllers"] = prepare_kernel()
        result["is_v2"] = cgroups.is_v2()
        assert result["is_v2"], "no cgroup v2 hierarchy at /sys/fs/cgroup"
        say("cluster up")
        start = time.monotonic()
        sriovop("up", "--nodes", "1", timeout=UP_TIMEOUT_S)
        result["up_s"] = round(time.monotonic() - start, 1)
        net = ClusterNetwork.from_json(json.loads((CLUSTER_DIR / "cluster.json").read_text()))
        [node] = [n.name for n in net.nodes]
        name = teardown.cgroup_name(net, node)
        top = cgroups.CGROUP_FS / name
        assert cgroups.remaining(name) == [top], cgroups.remaining(name)
        enabled = (top / "cgroup.subtree_control").read_text().split()
        result["node_cgroup_subtree_control"] = enabled
        assert {"cpu", "memory", "pids"} <= set(enabled), enabled

        say("pod")
        pod_start = time.monotonic()
        kube = client_for(CLUSTER_DIR / "kubeconfig")
        wait_for(lambda: kube.get(SERVICE_ACCOUNT, "default", "default"), timeout=POD_TIMEOUT_S,
                 what="default serviceaccount")
        kube.create(POD, pod_on(node, "pause"), "default")
        pod = wait_for(lambda: running_pod(kube, "default", "pause"), timeout=POD_TIMEOUT_S, what="pause pod Running")
        uid = pod["metadata"]["uid"]
        result["pod_s"] = round(time.monotonic() - pod_start, 1)
        in_node = pids_in(top)
        pause = [p for p in in_node if Path(f"/proc/{p}/comm").exists()
                 and Path(f"/proc/{p}/comm").read_text().strip() == "pause"]
        result["pause_pids_in_node_cgroup"] = len(pause)
        assert pause, f"no pause process in {top}: {in_node}"
        membership = Path(f"/proc/{pause[0]}/cgroup").read_text().strip()
        result["pause_cgroup"] = membership
        # the cgroupfs driver's layout: /<cgroupRoot>/kubepods/<qos>/pod<uid>/<container>
        assert membership.startswith(f"0::/{name}/kubepods") and f"pod{uid}" in membership, membership

        say("cluster down")
        start = time.monotonic()
        sriovop("down", timeout=UP_TIMEOUT_S)
        result["down_s"] = round(time.monotonic() - start, 1)
        assert [p for p in in_node if process.pid_alive(p)] == [], "pod processes outlived down"
        assert cgroups.remaining(name) == [], cgroups.remaining(name)
        assert teardown.mounts_under(CLUSTER_DIR) == [], teardown.mounts_under(CLUSTER_DIR)
        assert teardown.bridges_left([n.bridge for n in net.nodes]) == []
        result["passed"] = True
        return 0
    except Exception as e:  # every failure becomes the result line the host test reads
        result["error"] = f"{type(e).__name__}: {e}"[-6000:]
        result["diagnostics"] = diagnostics()
        return 1
    finally:
        print("SRIOVOP-RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    sys.exit(main())
