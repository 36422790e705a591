"""`sriovop dev cluster down` leaves nothing of a cluster with nodes on the host.

The cluster here is its own, started beside the session's 2-node cluster (which must survive its
neighbour's down untouched). It runs a pod on each node so that every kind of host object exists, and
each kind is asserted present while up and gone after down: processes, mounts, network namespaces,
veths, bridges, iptables chains, cgroups, the address slot. Twice: a plain `down`, and `down` after the
supervisor was SIGKILLed (its daemons die with it, but containerd shims, pods, mounts, bridges, chains
and cgroups stay until `down` removes them from the directory alone).
Host: this machine, not the simulated SR-IOV host nor the QEMU guest.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.devcluster import addressing, cgroups, process, serviceproxy, teardown
from sriovop.runtime.kinds import NAMESPACE, POD, SERVICE_ACCOUNT
from test.support.cluster import (
    POD_TIMEOUT_S,
    ClusterNodes,
    cluster_down,
    cluster_up,
    pids_in,
    pod_on,
    running_pod,
)
from test.support.controllers_harness import client_for
from test.support.poll import wait_for


def pids_mentioning(directory: Path) -> list[int]:
    """Processes whose command line names the cluster directory (every daemon of the cluster and
    the containerd shims, which carry their containerd's socket path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(directory).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except (FileNotFoundError, ProcessLookupError):
                continue
    return [p for p in found if process.pid_alive(p)]


def cgroup_pids(name: str) -> list[int]:
    return [pid for top in cgroups.remaining(name) for pid in pids_in(top)]


def ip_netns() -> list[str]:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split()


def iptables_chains() -> set[str]:
    out = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0][1:] for line in out.splitlines() if line.startswith(":")}


def nsfs_mounts_under(directory: Path) -> list[str]:
    prefix = str(directory) + "/"
    return [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if line.split(" - ")[1].startswith("nsfs ") and line.split()[4].startswith(prefix)]


@pytest.fixture
def cluster_dir() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="sovd-", dir="/tmp"))
    yield directory
    cluster_down(directory)  # idempotent: a no-op after the test's own down
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("supervisor_killed", [False, True], ids=["down", "down-after-supervisor-sigkill"])
def test_down_leaves_nothing_behind(cluster_dir: Path, cluster_nodes: ClusterNodes, supervisor_killed: bool) -> None:
    netns_before, chains_before = ip_netns(), iptables_chains()
    cluster = cluster_up(cluster_dir, 2)
    net = cluster.network
    assert net.slot != cluster_nodes.network.slot
    assert not net.pod_range.overlaps(cluster_nodes.network.pod_range)
    kube = client_for(cluster.kubeconfig)
    kube.create(NAMESPACE, {"metadata": {"name": "leftovers"}})
    wait_for(lambda: kube.get(SERVICE_ACCOUNT, "default", "leftovers"), timeout=120, what="default serviceaccount")
    for node in cluster.node_names:
        kube.create(POD, pod_on(node, f"pause-{node}"), "leftovers")
    for node in cluster.node_names:
        wait_for(lambda n=node: running_pod(kube, "leftovers", f"pause-{n}"),  # type: ignore[misc]
                 timeout=POD_TIMEOUT_S, what=f"pod on {node} Running")

    bridges = [n.bridge for n in net.nodes]
    cgroup_names = [teardown.cgroup_name(net, n) for n in cluster.node_names]
    daemons = pids_mentioning(cluster_dir)
    shims = [p for node in cluster.node_names for p in teardown.shim_pids(cluster.containerd_socket(node))]
    in_cgroups = [p for name in cgroup_names for p in cgroup_pids(name)]
    veths = teardown.veths_on(bridges)
    # everything the assertions below expect gone is there while the cluster runs
    # supervisor, etcd and kube-apiserver, kube-controller-manager and kube-scheduler, 2 x (containerd, kubelet)
    assert len(daemons) >= 1 + 2 + 2 + 2 * 2, daemons
    assert len(shims) >= 2, "one containerd shim per pod"
    assert in_cgroups, "the pause processes run in the nodes' cgroups"
    assert len(nsfs_mounts_under(cluster_dir)) >= 2, "one pod network namespace per pod, under the cluster dir"
    assert len(teardown.mounts_under(cluster_dir)) > len(nsfs_mounts_under(cluster_dir)), "rootfs and volume mounts"
    assert len(veths) == 2 and teardown.bridges_left(bridges) == bridges
    assert serviceproxy.chains_left(net.tag), "the cluster's Service chain and its hooks"
    assert all(cgroups.remaining(name) for name in cgroup_names)
    assert (addressing.CLAIMS_DIR / str(net.slot)).exists()

    if supervisor_killed:
        supervisor = int((cluster_dir / "supervisor.pid").read_text())
        os.kill(supervisor, signal.SIGKILL)
        wait_for(lambda: not process.pid_alive(supervisor), timeout=30, what="supervisor gone")
        assert shims and all(process.pid_alive(p) for p in shims), "shims outlive the supervisor"
    cluster_down(cluster_dir)

    assert [p for p in daemons + shims + in_cgroups if process.pid_alive(p)] == []
    assert pids_mentioning(cluster_dir) == []
    assert teardown.mounts_under(cluster_dir) == []
    assert nsfs_mounts_under(cluster_dir) == []
    # containerd names pod namespaces cni-<uuid>; other tests' own namespaces may come and go meanwhile
    assert [n for n in set(ip_netns()) - set(netns_before) if n.startswith("cni-")] == []
    with_links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    assert [v for v in veths if f" {v}@" in with_links] == []
    assert teardown.bridges_left(bridges) == []
    assert serviceproxy.chains_left(net.tag) == []
    # no host chain appeared (clusters that other test runs start meanwhile add only their own SRIOVOP-C<n>)
    appeared = {c for c in iptables_chains() - chains_before if not c.startswith("SRIOVOP-C")}
    assert appeared == set()
    assert [cgroups.remaining(name) for name in cgroup_names] == [[], []]
    assert addressing.claim_owner(net.slot) != str(cluster_dir), "slot released (another cluster may take it at once)"
    assert not (cluster_dir / teardown.STATE_FILE).exists(), "a second down has nothing to do"
    # the neighbour is untouched: its Service chain and address slot are still there
    assert serviceproxy.chains_left(cluster_nodes.network.tag)
    assert (addressing.CLAIMS_DIR / str(cluster_nodes.network.slot)).exists()
