#!/usr/bin/env python3
"""The failover matrix on a kind cluster: faults of the leader operator pod made with Docker.

    failover_matrix.py --cluster NAME --network NET --kubeconfig FILE --work DIR [--faults a,b,...]

Run by hack/kind/failover.sh once the cluster is up and manifests/ applied. Each fault hits the replica
holding the Lease `a56def2a.openshift.io`; the node faults need it on a worker, so a leader found on the
control plane is first moved by deleting its pod (the followers run on the workers):

  delete_pod          `kubectl delete pod` of the leader (graceful handover);
  node_killed         `docker kill` of its node (crash; the node is started again afterwards);
  node_paused         `docker pause` of its node past the lease, then `docker unpause`;
  node_disconnected   `docker network disconnect` of its node, then reconnected at the same address;
  kubelet_stopped     `systemctl stop kubelet` in its node: the pod keeps running under containerd and keeps
                      the Lease, so no takeover is expected; the node goes NotReady and comes back.

The figures come from the in-cluster harness (test/support/failover_incluster.py): the Lease (a watch),
every write each operator process made (its container log files, read from the nodes' /var volumes on
this host), judged in the server's commit order (test/support/failover_analysis.py); a workload that
keeps changing SriovNetworks whose NADs must all match at the end, and a marker SriovNetwork changed
right after each fault whose NAD must show the change. One JSON line per fault on stdout, then the
report (the shape of hack/failover.py's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sriovop.runtime.client import Client  # noqa: E402
from sriovop.runtime.config import load_config  # noqa: E402
from sriovop.runtime.kinds import NODE, POD  # noqa: E402
from test.support.controllers_harness import wait_for  # noqa: E402
from test.support.failover_incluster import (  # noqa: E402
    DEPLOYMENT_NAME,
    LEASE_NAME,
    NAD_NAMESPACE,
    SELECTOR,
    WAIT_S,
    ClusterFailover,
    Run,
    Timings,
    _node_ready,
)
from test.support.failover_lease import LeaseRecorder  # noqa: E402
from test.support.failover_podlogs import PodLogWrites  # noqa: E402
from test.support.failover_workload import Workload  # noqa: E402
from test.support.incluster import NAMESPACE  # noqa: E402

FAULTS = ("delete_pod", "node_killed", "node_paused", "node_disconnected", "kubelet_stopped")
NODE_FAULTS = frozenset(FAULTS[1:])
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"


class KindNodes:
    """The Docker side of a kind cluster: its node containers, their addresses and /var volumes."""

    def __init__(self, cluster: str, network: str, cni_script: Path, kubeconfig: Path) -> None:
        self.cluster = cluster
        self.network = network
        self.cni_script = cni_script
        self.kubeconfig = kubeconfig

    @staticmethod
    def docker(*args: str, timeout: float = 120) -> str:
        done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"docker {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def inspect(self, node: str) -> dict[str, Any]:
        found: list[dict[str, Any]] = json.loads(self.docker("inspect", node))
        return found[0]

    def address(self, node: str) -> str:
        return str(self.inspect(node)["NetworkSettings"]["Networks"][self.network]["IPAddress"])

    def var_volume(self, node: str) -> Path:
        """The host directory of the node's /var volume (kind gives every node an anonymous one)."""
        for mount in self.inspect(node)["Mounts"]:
            if mount.get("Destination") == "/var":
                return Path(mount["Source"])
        raise RuntimeError(f"node {node} has no /var volume")

    def link_pod_logs(self, nodes_dir: Path, nodes: Sequence[str]) -> None:
        """nodes_dir/<node>/pod-logs → the node's /var/log/pods, the layout PodLogWrites reads."""
        for node in nodes:
            (nodes_dir / node).mkdir(parents=True, exist_ok=True)
            link = nodes_dir / node / "pod-logs"
            if not link.is_symlink():
                link.symlink_to(self.var_volume(node) / "log" / "pods")

    def connect(self, node: str, address: str) -> None:
        """Reattach the node at its old address (the kubelet's node IP and the routes name it)."""
        self.docker("network", "connect", "--ip", address, self.network, node)

    def routes(self) -> None:
        """The CNI config and the pod routes between nodes again (a restarted or reattached node lost its)."""
        subprocess.run(["bash", str(self.cni_script), self.cluster, str(self.kubeconfig)], check=True,
                       timeout=300, stdout=sys.stderr)


class KindFailover(ClusterFailover):
    """ClusterFailover's observation, marker and report, with faults made through Docker."""

    def __init__(self, kube: Client, nodes: KindNodes, work: Path, timings: Timings,
                 progress: Callable[[str], None], workload_period: float = 1.0) -> None:
        # Not ClusterFailover.__init__: that one reads the dev cluster's node directories.
        self.kube = kube
        self.nodes = nodes
        self.timings = timings
        self.progress = progress
        self.lease = LeaseRecorder(kube, NAMESPACE, LEASE_NAME)
        self.logs = PodLogWrites(work / "nodes", NAMESPACE, DEPLOYMENT_NAME)
        self.workload = Workload(Client(kube.config), NAMESPACE, NAD_NAMESPACE, period=workload_period)
        self.marker = f"failover-marker-{uuid.uuid4().hex[:6]}"
        self.vlan = 1
        self.runs: list[Run] = []

    def _live_pods(self) -> list[dict[str, Any]]:
        return [dict(p) for p in self.kube.list(POD, NAMESPACE, label_selector=SELECTOR)
                if not p["metadata"].get("deletionTimestamp")]

    def _on_control_plane(self, pod: dict[str, Any]) -> bool:
        labels = self.kube.get(NODE, pod["spec"]["nodeName"])["metadata"].get("labels") or {}
        return CONTROL_PLANE_LABEL in labels

    kinds = FAULTS

    def target(self, kind: str) -> tuple[str, dict[str, Any]]:
        """Settle; for a node fault also move the Lease off the control plane (a fault of that node would
        stop the API server): its pod is deleted and a follower, which runs on a worker, takes over."""
        for _ in range(5):
            holder, pod = self.settle()
            if kind not in NODE_FAULTS or not self._on_control_plane(pod):
                return holder, pod
            self.progress(f"leader {holder} runs on the control plane: deleting its pod to move the Lease")
            self.kube.delete(POD, pod["metadata"]["name"], NAMESPACE)
            moved = partial(lambda old: self.lease.holder() not in ("", old), holder)
            wait_for(moved, timeout=WAIT_S, what="the Lease moved", interval=0.2)
        raise RuntimeError("the Lease stayed on the control plane after five moves")

    # -- faults (delete_pod is ClusterFailover's) --------------------------------------------------

    def _node_back(self, run: Run) -> None:
        self.nodes.routes()
        wait_for(lambda: _node_ready(self.kube, run.old_node), timeout=WAIT_S, what=f"{run.old_node} Ready again",
                 interval=1)
        run.extra["node_back_s"] = round(time.time() - run.fault.at, 3)

    def _node_killed(self, run: Run, pod: dict[str, Any]) -> None:
        node = run.old_node
        address = self.nodes.address(node)
        run.fault.at = time.time()
        self.nodes.docker("kill", node)
        try:
            run.marker_rendered_s = self._change_marker(run)
            self._await_takeover(run)
        finally:
            # Started again at the same address: docker gives a restarted container any free one otherwise.
            self.nodes.docker("network", "disconnect", self.nodes.network, node)
            self.nodes.connect(node, address)
            self.nodes.docker("start", node)
            run.fault.resumed_at = time.time()
        self._node_back(run)

    def _taken_over_past_lease(self, run: Run) -> None:
        """A change made during the fault, a new leader writing, and the old leader's lease certainly over
        before it may run again."""
        run.marker_rendered_s = self._change_marker(run)
        self._await_takeover(run)
        time.sleep(max(0.0, run.fault.at + self.timings.lease + 2 * self.timings.retry - time.time()))

    def _node_paused(self, run: Run, pod: dict[str, Any]) -> None:
        run.fault.at = time.time()
        self.nodes.docker("pause", run.old_node)
        try:
            self._taken_over_past_lease(run)
        finally:
            run.fault.resumed_at = time.time()
            self.nodes.docker("unpause", run.old_node)
        self._old_leader_exit(run, pod)

    def _node_disconnected(self, run: Run, pod: dict[str, Any]) -> None:
        address = self.nodes.address(run.old_node)
        run.fault.at = time.time()
        self.nodes.docker("network", "disconnect", self.nodes.network, run.old_node)
        try:
            self._taken_over_past_lease(run)
        finally:
            run.fault.resumed_at = time.time()
            self.nodes.connect(run.old_node, address)
        self._node_back(run)
        self._old_leader_exit(run, pod)

    def _old_leader_exit(self, run: Run, pod: dict[str, Any]) -> None:
        """The old leader, running again past its lease, must exit without writing: the exit code of that
        container (the kubelet reports it as the last termination) and whether its log says
        "leader election lost" (its log file, `<restart count>.log` in the pod's log directory)."""
        name = pod["metadata"]["name"]
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        restarts = int(statuses[0].get("restartCount") or 0)

        def terminated() -> dict[str, Any] | None:
            status = (self.kube.get(POD, name, NAMESPACE).get("status") or {}).get("containerStatuses") or [{}]
            last = (status[0].get("lastState") or {}).get("terminated")
            return dict(last) if last and int(status[0].get("restartCount") or 0) > restarts else None
        try:
            last = wait_for(terminated, timeout=WAIT_S, what=f"{name}'s container restarted", interval=1)
        except AssertionError:
            run.fault.notes.append("the old leader's container was not seen to exit")
            return
        run.fault.victim_exit_code = int(last.get("exitCode", 0))
        # The kubelet keeps one dead container's log: after a second restart (a node cut off for long)
        # the file is gone and the answer is unknown rather than no.
        logs = list(self.logs.nodes_dir.glob(f"*/pod-logs/{NAMESPACE}_{name}_*/*/{restarts}.log"))
        if logs:
            run.fault.victim_lost_election = any("leader election lost" in p.read_text(errors="replace") for p in logs)
        else:
            run.fault.notes.append(f"the old leader's log ({restarts}.log) was removed by the kubelet")

    def stop_kubelet(self, run: Run) -> Callable[[], object]:
        """`systemctl stop kubelet` in the node: its containers keep running under containerd."""
        run.fault.at = time.time()
        self.nodes.docker("exec", run.old_node, "systemctl", "stop", "kubelet")
        return partial(self.nodes.docker, "exec", run.old_node, "systemctl", "start", "kubelet")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster", required=True, help="the kind cluster name")
    parser.add_argument("--network", required=True, help="the Docker network of its nodes")
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True, help="where the pod-log links and the report go")
    parser.add_argument("--faults", default=",".join(FAULTS),
                        help=f"comma-separated, in order (of {', '.join(FAULTS)})")
    args = parser.parse_args(argv)
    kinds = [k for k in args.faults.split(",") if k]
    bad = [k for k in kinds if k not in FAULTS]
    if bad:
        parser.error(f"--faults: unknown {', '.join(bad)} (known: {', '.join(FAULTS)})")
    started = time.time()

    def progress(message: str) -> None:
        print(f"[{time.time() - started:6.0f}s] {message}", file=sys.stderr, flush=True)

    kube = Client(load_config(args.kubeconfig))
    nodes = KindNodes(args.cluster, args.network, Path(__file__).with_name("cni.sh"), args.kubeconfig)
    kind = os.environ.get("KIND", "kind")
    names = subprocess.run([kind, "get", "nodes", "--name", args.cluster], capture_output=True, text=True,
                           check=True).stdout.split()
    nodes.link_pod_logs(args.work / "nodes", names)
    failover = KindFailover(kube, nodes, args.work, Timings(), progress)
    failover.start()
    try:
        for kind in kinds:
            print(json.dumps(failover.inject(kind), sort_keys=True), flush=True)
        report = failover.finish()
    finally:
        failover.stop()
    report["config"].pop("node_monitor_grace_period_s", None)  # the dev cluster's setting, not kind's
    report["config"].update({"kind_cluster": args.cluster, "nodes": names})
    report["wall_s"] = round(time.time() - started, 1)
    (args.work / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True))
    print(json.dumps(report, sort_keys=True), flush=True)
    ok = (report["overlapping_writer_intervals"] == 0 and report["all_changes_in_nads"]
          and all(o.get("took_over") for o in report["faults"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
