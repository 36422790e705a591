"""Failover as users cause it, on an installed cluster (test/support/incluster.py): the operator
Deployment's leader is taken away by `kubectl delete pod`, SIGKILL of its container (`crictl stop -t 0`),
SIGSTOP of its process past the lease, its node's kubelet stopped, or its whole node lost
(test/support/failover_nodefaults.py says how the last two are made on this machine).

The figures have the shape of hack/failover.py's report and come from the same sources: the Lease
(a watch), every write each operator process made (its container log: test/support/failover_podlogs.py)
judged in the server's commit order (test/support/failover_analysis.py), a workload that keeps
changing SriovNetworks (test/support/failover_workload.py) whose NADs must all match at the end, and per
run one "marker" SriovNetwork changed right after the fault whose NAD must show the change.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION, SRIOV_NETWORK
from sriovop.runtime.client import Client
from sriovop.runtime.errors import Conflict
from sriovop.runtime.kinds import DEPLOYMENT, NODE, POD
from sriovop.runtime.kinds import NAMESPACE as NAMESPACE_KIND
from test.support import failover_nodefaults as host
from test.support.failover_analysis import (
    FaultRecord,
    LeaseChange,
    freezes,
    outcome,
    summarize,
    writers_report,
)
from test.support.failover_lease import LeaseRecorder
from test.support.failover_podlogs import PodLogWrites
from test.support.failover_workload import Workload, wait_converged
from test.support.incluster import NAMESPACE, Installed
from test.support.poll import TimedOut, wait_for

LEASE_NAME = "a56def2a.openshift.io"
DEPLOYMENT_NAME = "sriov-network-operator"
SELECTOR = {"app": "sriov-network-operator"}
NAD_NAMESPACE = "failover-nads"
RESOURCE_PREFIX = "openshift.io"
KINDS = ("delete_pod", "sigkill_container", "sigstop_leader", "kubelet_stopped", "node_lost")
#: The node-controller setting of `sriovop dev cluster` (sriovop/devcluster/controllermanager.py).
NODE_MONITOR_GRACE_S = 40.0
NO_TAKEOVER_REASON = ("the leader's container keeps running under containerd while its kubelet is stopped, so "
                      "it keeps renewing the Lease and keeps writing: nothing needs to take over (the node goes "
                      "NotReady; its pods would only be evicted after the 300 s not-ready toleration)")
#: Generous: six engineers share two cores.
WAIT_S = 300.0


@dataclass(frozen=True)
class Timings:
    """The operator's leader-election flags; the shipped manifests use the defaults 15/10/2 s."""

    lease: float = 15.0
    renew: float = 10.0
    retry: float = 2.0

    def args(self) -> list[str]:
        return [f"--leader-election-lease-duration={self.lease:g}s",
                f"--leader-election-renew-deadline={self.renew:g}s",
                f"--leader-election-retry-period={self.retry:g}s"]


def operator_args(env: Installed) -> list[str]:
    dep = env.kube.get(DEPLOYMENT, DEPLOYMENT_NAME, NAMESPACE)
    return list(dep["spec"]["template"]["spec"]["containers"][0]["args"])


def set_operator_args(env: Installed, args: Sequence[str]) -> list[str]:
    """Replace the operator container's args and wait for the rollout; returns the previous args."""
    before = operator_args(env)
    if before != list(args):
        env.kube.patch(DEPLOYMENT, DEPLOYMENT_NAME, [
            {"op": "replace", "path": "/spec/template/spec/containers/0/args", "value": list(args)}],
            NAMESPACE, patch_type="json")
    env.kubectl("-n", NAMESPACE, "rollout", "status", f"deploy/{DEPLOYMENT_NAME}", "--timeout=600s", timeout=660)
    return before


def with_timings(args: Sequence[str], timings: Timings) -> list[str]:
    return [a for a in args if not a.startswith("--leader-election-")] + timings.args()


def _pod_name(holder: str) -> str:
    return holder.split("_", 1)[0]


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return not pod["metadata"].get("deletionTimestamp") and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _node_ready(kube: Client, node: str) -> bool:
    conditions = (kube.get(NODE, node).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@dataclass
class Run:
    kind: str
    index: int
    fault: FaultRecord
    old_node: str = ""
    marker_vlan: int = 0
    marker_rendered_s: float | None = None
    marker_lost: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class ClusterFailover:
    """Start with `start()`, then `inject(kind)` as often as wanted, then `finish()` for the report."""

    def __init__(self, env: Installed, timings: Timings, progress: Callable[[str], None] = lambda _: None,
                 workload_period: float = 1.0) -> None:
        self.env = env
        self.kube = env.kube
        self.timings = timings
        self.progress = progress
        self.lease = LeaseRecorder(env.kube, NAMESPACE, LEASE_NAME)
        self.logs = PodLogWrites(env.cluster.dir / "nodes", NAMESPACE, DEPLOYMENT_NAME)
        self.workload = Workload(Client(env.kube.config), NAMESPACE, NAD_NAMESPACE, period=workload_period)
        self.marker = f"failover-marker-{uuid.uuid4().hex[:6]}"
        self.vlan = 1
        self.runs: list[Run] = []

    # -- setup -----------------------------------------------------------------------------------

    def start(self) -> None:
        try:
            self.kube.create(NAMESPACE_KIND, {"metadata": {"name": NAD_NAMESPACE}})
        except Conflict:
            pass
        self.logs.start()
        self.lease.start()
        wait_for(lambda: self.kube.create(SRIOV_NETWORK, {
            "metadata": {"name": self.marker, "namespace": NAMESPACE},
            "spec": {"resourceName": "intelnics", "networkNamespace": NAD_NAMESPACE, "vlan": self.vlan}}),
            timeout=WAIT_S, what="the marker SriovNetwork admitted", interval=1)
        wait_for(partial(self._marker_is, self.vlan), timeout=WAIT_S, what="the marker's NAD", interval=0.5)
        self.workload.start()

    def stop(self) -> None:
        self.workload.stop_event.set()
        self.lease.stop()
        self.logs.stop()

    # -- observation -----------------------------------------------------------------------------

    def _marker_is(self, vlan: int) -> bool:
        nad = self.kube.get(NETWORK_ATTACHMENT_DEFINITION, self.marker, NAD_NAMESPACE)
        return bool(json.loads(nad["spec"]["config"]).get("vlan") == vlan)

    def _wrote_since(self, identity: str, at: float) -> bool:
        return any(w.ok and w.sent >= at and w.identity == identity for w in self.logs.writes())

    def _live_pods(self) -> list[dict[str, Any]]:
        return [p for p in self.env.pods(NAMESPACE, SELECTOR) if not p["metadata"].get("deletionTimestamp")]

    def settle(self) -> tuple[str, dict[str, Any]]:
        """Three ready replicas and a leader among them that has written (an identity is one process,
        and a process writes only while it leads)."""
        wait_for(lambda: sum(1 for p in self._live_pods() if _ready(p)) == 3, timeout=WAIT_S,
                 what="three ready operator pods", interval=1)

        def leader() -> tuple[str, dict[str, Any]] | None:
            changes = self.lease.snapshot()
            holder = changes[-1].holder if changes else ""
            pods = {p["metadata"]["name"]: p for p in self._live_pods() if _ready(p)}
            if not holder or _pod_name(holder) not in pods or not self._wrote_since(holder, 0.0):
                return None
            return holder, pods[_pod_name(holder)]
        found: tuple[str, dict[str, Any]] = wait_for(leader, timeout=WAIT_S, what="a leader that writes", interval=0.5)
        return found

    def _change_marker(self, run: Run) -> float | None:
        """Change the marker right away (retrying while admission refuses it); seconds from the fault
        until its NAD shows the change, or None if it never does (a lost change)."""
        self.vlan += 1
        run.marker_vlan = self.vlan
        wait_for(lambda: self.kube.patch(SRIOV_NETWORK, self.marker, {"spec": {"vlan": run.marker_vlan}}, NAMESPACE),
                 timeout=WAIT_S, what="the marker change admitted", interval=0.5)
        try:
            wait_for(partial(self._marker_is, run.marker_vlan), timeout=WAIT_S,
                     what=f"vlan {run.marker_vlan} in the marker's NAD", interval=0.2)
        except AssertionError:
            run.marker_lost += 1
            return None
        return round(time.time() - run.fault.at, 3)

    @staticmethod
    def _eventually(check: Callable[[], bool], timeout: float = 60.0) -> bool:
        try:
            return bool(wait_for(check, timeout=timeout, what="a condition", interval=0.2))
        except TimedOut:
            return False

    def _taken_over(self, old: str, since: float) -> bool:
        holder = self.lease.holder()
        return bool(holder) and holder != old and self._wrote_since(holder, since)

    # -- faults ----------------------------------------------------------------------------------

    #: The faults `inject` knows (a subclass that makes faults another way names its own).
    kinds: tuple[str, ...] = KINDS

    def target(self, kind: str) -> tuple[str, dict[str, Any]]:
        """The leader to hit with `kind`, and its pod (a settled cluster's)."""
        return self.settle()

    def inject(self, kind: str) -> dict[str, Any]:
        if kind not in self.kinds:
            raise ValueError(f"fault kind {kind!r}: must be one of {', '.join(self.kinds)}")
        holder, pod = self.target(kind)
        run = Run(kind, sum(1 for r in self.runs if r.kind == kind) + 1,
                  FaultRecord(kind, time.time(), victim=holder, old_leader=holder), old_node=pod["spec"]["nodeName"])
        self.runs.append(run)
        getattr(self, f"_{kind}")(run, pod)
        result = self.outcome(run)
        took = result.get("takeover_s")
        self.progress(f"{kind} #{run.index}: old={holder} on {run.old_node} new={result.get('new_leader')} "
                      f"takeover={'none' if took is None else f'{took:.2f}s'} marker={run.marker_rendered_s}s")
        return result

    def _socket(self, node: str) -> Any:
        return self.env.cluster.containerd_socket(node)

    def _container(self, pod: dict[str, Any]) -> tuple[str, int]:
        socket = self._socket(pod["spec"]["nodeName"])
        ids = host.crictl(socket, "ps", "-q", "--label", f"io.kubernetes.pod.uid={pod['metadata']['uid']}").split()
        assert len(ids) == 1, f"running containers of pod {pod['metadata']['name']}: {ids}"
        return ids[0], int(json.loads(host.crictl(socket, "inspect", ids[0]))["info"]["pid"])

    def _await_takeover(self, run: Run) -> None:
        wait_for(partial(self._taken_over, run.fault.old_leader, run.fault.at), timeout=WAIT_S,
                 what=f"a new leader writing after {run.kind}", interval=0.2)

    def _delete_pod(self, run: Run, pod: dict[str, Any]) -> None:
        run.fault.at = time.time()
        self.kube.delete(POD, pod["metadata"]["name"], NAMESPACE)
        run.marker_rendered_s = self._change_marker(run)
        self._await_takeover(run)

    def _sigkill_container(self, run: Run, pod: dict[str, Any]) -> None:
        cid, _ = self._container(pod)
        run.fault.at = time.time()
        host.crictl(self._socket(run.old_node), "stop", "-t", "0", cid)
        run.marker_rendered_s = self._change_marker(run)
        self._await_takeover(run)

    def _sigstop_leader(self, run: Run, pod: dict[str, Any]) -> None:
        cid, pid = self._container(pod)
        run.fault.at = time.time()
        os.kill(pid, signal.SIGSTOP)
        try:
            run.marker_rendered_s = self._change_marker(run)
            self._await_takeover(run)
        finally:
            run.fault.resumed_at = time.time()
            os.kill(pid, signal.SIGCONT)
        # Resumed past its lease: it must notice the loss and exit without writing.
        wait_for(lambda: not host.alive(pid), timeout=WAIT_S, what="the resumed old leader exiting", interval=0.5)
        socket = self._socket(run.old_node)

        def exited() -> list[int]:  # [exit code] once the runtime has it (a list: 0 is a code too)
            code = json.loads(host.crictl(socket, "inspect", cid))["status"].get("exitCode")
            return [] if code is None else [int(code)]
        run.fault.victim_exit_code = wait_for(exited, timeout=WAIT_S, what="the old leader's container exited",
                                              interval=0.5)[0]
        run.fault.victim_lost_election = "leader election lost" in host.crictl(socket, "logs", cid, with_stderr=True)

    def stop_kubelet(self, run: Run) -> Callable[[], object]:
        """Stop the kubelet of the leader's node (SIGSTOP here: the dev cluster's supervisor treats an
        exited kubelet as a broken cluster); sets the fault time and returns what starts it again."""
        kubelet = host.kubelet_pid(self.env.cluster.dir, run.old_node)
        run.fault.at = time.time()
        os.kill(kubelet, signal.SIGSTOP)
        return partial(os.kill, kubelet, signal.SIGCONT)

    def _kubelet_stopped(self, run: Run, pod: dict[str, Any]) -> None:
        resume = self.stop_kubelet(run)
        try:
            run.marker_rendered_s = self._change_marker(run)  # right away: the leader must simply carry on
            wait_for(lambda: not _node_ready(self.kube, run.old_node), timeout=WAIT_S + NODE_MONITOR_GRACE_S,
                     what=f"{run.old_node} NotReady", interval=1)
            not_ready = time.time()
            run.extra["node_not_ready_s"] = round(not_ready - run.fault.at, 3)
            run.extra["marker_rendered_while_not_ready_s"] = self._change_marker(run)  # and once it is NotReady
            # Its write is in the NAD; the log line that says who made it is read a moment later.
            run.extra["leader_wrote_while_not_ready"] = self._eventually(
                partial(self._wrote_since, run.fault.old_leader, not_ready))
        finally:
            run.fault.resumed_at = time.time()
            resume()
        wait_for(lambda: _node_ready(self.kube, run.old_node), timeout=WAIT_S, what=f"{run.old_node} Ready again",
                 interval=1)
        run.extra["kubelet_stopped_s"] = round(run.fault.resumed_at - run.fault.at, 3)
        # Back: the same three pods, the same leader, nothing started twice.
        self.settle()
        run.extra["operator_pods_after"] = len(self._live_pods())
        run.extra["leader_after"] = self.lease.holder()

    def _node_lost(self, run: Run, pod: dict[str, Any]) -> None:
        kubelet = host.kubelet_pid(self.env.cluster.dir, run.old_node)
        live = self.env.pods(NAMESPACE, {})
        others = [p for p in self._live_pods() if p["spec"]["nodeName"] != run.old_node]
        admission_lost = any(p["metadata"]["name"].startswith("operator-webhook") and
                             p["spec"].get("nodeName") == run.old_node for p in live)
        run.extra.update({"replicas_on_other_nodes": len(others), "admission_webhook_on_lost_node": admission_lost})
        run.fault.at = time.time()
        os.kill(kubelet, signal.SIGSTOP)
        frozen = host.container_pids(self._socket(run.old_node))
        host.signal_all(frozen, signal.SIGSTOP)
        try:
            if not others:
                run.fault.notes.append("no replica on another node: none can take over before the pods are evicted")
            else:
                wait_for(lambda: self.lease.holder() not in ("", run.fault.old_leader), timeout=WAIT_S,
                         what="the Lease taken by a replica on another node", interval=0.2)
                if not admission_lost:  # a change made while the node is lost, rendered by the new leader
                    run.marker_rendered_s = self._change_marker(run)
                    self._await_takeover(run)
                else:
                    run.extra["note"] = ("the admission webhook ran on the lost node: SR-IOV writes are refused "
                                         "until it is back, so the new leader's first write waits for that")
        finally:
            run.fault.resumed_at = time.time()
            host.signal_all(frozen, signal.SIGCONT)
            os.kill(kubelet, signal.SIGCONT)
        run.extra["node_lost_s"] = round(run.fault.resumed_at - run.fault.at, 3)
        if admission_lost:
            run.marker_rendered_s = self._change_marker(run)
            self._await_takeover(run)
        wait_for(lambda: _node_ready(self.kube, run.old_node), timeout=WAIT_S, what=f"{run.old_node} Ready again",
                 interval=1)

    # -- report ----------------------------------------------------------------------------------

    def outcome(self, run: Run) -> dict[str, Any]:
        writes = self.logs.writes()
        lease = self.lease.snapshot()
        if run.kind == "kubelet_stopped":
            out = outcome(FaultRecord("follower_kill", run.fault.at, old_leader=run.fault.old_leader), writes, lease)
            others = [w for w in writes if w.ok and w.identity != run.fault.old_leader
                      and run.fault.at <= w.sent <= (run.fault.resumed_at or time.time())]
            out.update({"fault": run.kind, "victim": run.old_node, "takeover_s": None,
                        "takeover_reason": NO_TAKEOVER_REASON,
                        "took_over": not others and out.get("new_leader") == run.fault.old_leader,
                        "writes_by_others_during_fault": len(others),
                        "leader_changed": _changed(lease, run.fault.at, run.fault.resumed_at or time.time(),
                                                   run.fault.old_leader)})
        else:
            out = outcome(run.fault, writes, lease)
            out["fault"] = run.kind
            if out.get("takeover_s") is None:
                out["takeover_reason"] = "; ".join(run.fault.notes) or "no write by a new leader was seen"
        out.update({"run": run.index, "old_node": run.old_node, "marker_vlan": run.marker_vlan,
                    "marker_rendered_s": run.marker_rendered_s,
                    "lost_changes": run.marker_lost, **run.extra})
        return out

    def finish(self) -> dict[str, Any]:
        """Stop the workload, wait for the NADs to converge, and build the report."""
        self.workload.stop()
        problems, took = wait_converged(self.kube, NAMESPACE, NAD_NAMESPACE, RESOURCE_PREFIX, timeout=WAIT_S)
        self.logs.poll()
        outcomes = [self.outcome(r) for r in self.runs]
        report = writers_report(self.logs.writes(), freezes(outcomes))
        _attribute_overlaps(outcomes, report["overlaps"])
        report.update({
            "config": {"cluster": True, "lease_duration_s": self.timings.lease,
                       "renew_deadline_s": self.timings.renew, "retry_period_s": self.timings.retry,
                       "faults": len(self.runs), "node_monitor_grace_period_s": NODE_MONITOR_GRACE_S},
            "takeover": summarize_runs(outcomes),
            "all_changes_in_nads": not problems and all(o["lost_changes"] == 0 for o in outcomes),
            "lost_changes": problems + [f"{o['fault']} #{o['run']}: marker vlan {o['marker_vlan']} never rendered"
                                        for o in outcomes if o["lost_changes"]],
            "convergence_s": round(took, 2),
            "leadership_changes": len([c for c in self.lease.snapshot() if c.holder]),
            "workload": dict(sorted(self.workload.counts.items())),
            "faults": outcomes,
        })
        return report


def _changed(lease: Sequence[LeaseChange], since: float, until: float, old: str) -> bool:
    return any(since <= c.at <= until and c.holder and c.holder != old for c in lease)


def _attribute_overlaps(outcomes: list[dict[str, Any]], overlaps: list[dict[str, Any]]) -> None:
    """Per run: the overlapping pairs that involve the leader it took away or the one that followed."""
    for o in outcomes:
        who = {o.get("old_leader"), o.get("new_leader")} - {None, ""}
        o["overlapping_writers"] = sum(1 for p in overlaps if p["a"] in who or p["b"] in who)


def summarize_runs(outcomes: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """hack/failover.py's per-kind summary plus the per-run figures the issue asks for."""
    out = summarize(outcomes)
    for kind, entry in out.items():
        runs = [o for o in outcomes if o["fault"] == kind]
        entry["takeover_s"] = [o.get("takeover_s") for o in runs]
        entry["lease_acquired_s"] = [o.get("lease_acquired_s") for o in runs]
        entry["overlapping_writers"] = [o.get("overlapping_writers", 0) for o in runs]
        entry["lost_changes"] = [o["lost_changes"] for o in runs]
        reasons = sorted({o["takeover_reason"] for o in runs if o.get("takeover_reason")})
        if reasons:
            entry["takeover_reason"] = reasons[0] if len(reasons) == 1 else reasons
    return out
