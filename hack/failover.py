#!/usr/bin/env python3
"""Failover harness: three `sriovop operator` replicas, a busy workload, and a scripted series of faults.

    .venv/bin/python hack/failover.py            # 30 faults, lease 15/10/2 s (about 15-20 minutes)
    .venv/bin/python hack/failover.py --quick    # 5 faults, lease 4/3/0.5 s (about a minute)
    .venv/bin/python hack/failover.py --cluster  # in-cluster: 5 runs of each kind (about 25 minutes)

`--cluster` brings up its own `sriovop dev cluster --nodes 2`, builds and loads the images, installs
`manifests/` with kubectl and causes failover as users do (test/support/failover_incluster.py):
`kubectl delete pod` of the leader, SIGKILL of its container, SIGSTOP of its process past the lease, its
kubelet stopped, its node lost. The report has the same shape, one JSON line on stdout.

Starts a private control plane (sriovop.devcluster), installs the CRDs, the operator namespace, the
supported-nic-ids ConfigMap and a default SriovOperatorConfig, starts three replicas with leader
election and a workload that keeps creating, changing and deleting SriovNetworks, then injects faults in
rounds of: SIGTERM of the leader, SIGKILL of the leader, SIGSTOP of the leader past its lease then
SIGCONT, a kube-apiserver restart, SIGKILL of a follower. Exited replicas are restarted (under a new
identity) so three keep running.

It records every holder change of the Lease (a watch) and every write each replica makes (the
replicas' JSON logs: sriovop/operator/fencing.py logs `event="write"` with the committed
resourceVersion), and prints one JSON document on stdout:
- per fault type, the takeover time (fault → first successful write by the new leader), median and
  max, and the time the Lease changed hands;
- `overlapping_writer_intervals`: pairs of replicas whose writes interleaved in the server's commit
  order (must be 0);
- whether every SriovNetwork change ended up in its NAD (final NADs compared with the final networks'
  rendered config, and no NAD of a deleted network left behind).
Progress goes to stderr. Exit code 1 when writers overlapped, a change was lost, or a fault got no
takeover; the timing targets are reported under `targets`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION as NAD  # noqa: E402
from sriovop.api.v1.kinds import SRIOV_NETWORK, SRIOV_OPERATOR_CONFIG  # noqa: E402
from sriovop.api.v1.supportednics import supported_nic_ids_configmap  # noqa: E402
from sriovop.devcluster import ControlPlane  # noqa: E402
from sriovop.devcluster.bootstrap import install_crds  # noqa: E402
from sriovop.logsetup import configure_logging  # noqa: E402
from sriovop.runtime.client import Client  # noqa: E402
from sriovop.runtime.config import load_config  # noqa: E402
from sriovop.runtime.errors import ApiError, Conflict  # noqa: E402
from sriovop.runtime.kinds import CONFIG_MAP, NAMESPACE  # noqa: E402
from test.support.failover_analysis import (  # noqa: E402
    FaultRecord,
    LeaseChange,
    Write,
    freezes,
    outcome,
    parse_writes,
    summarize,
    writers_report,
)
from test.support.failover_incluster import KINDS as CLUSTER_KINDS  # noqa: E402
from test.support.failover_lease import LeaseRecorder  # noqa: E402
from test.support.failover_replicas import LEASE_NAME, Durations, Replica, ReplicaSet  # noqa: E402
from test.support.failover_workload import Workload, compare, wait_converged  # noqa: E402

OPERATOR_NAMESPACE = "sriov-network-operator"
NAD_NAMESPACE = "failover-nads"
RESOURCE_PREFIX = "openshift.io"
FAULT_ROUND = ("sigterm_leader", "sigkill_leader", "sigstop_leader", "apiserver_restart", "follower_kill")

_t0 = time.monotonic()


def progress(message: str) -> None:
    print(f"[{time.monotonic() - _t0:7.1f}s] {message}", file=sys.stderr, flush=True)


def install(client: Client) -> None:
    install_crds(client, REPO / "manifests" / "crds")
    for ns in (OPERATOR_NAMESPACE, NAD_NAMESPACE):
        try:
            client.create(NAMESPACE, {"metadata": {"name": ns}})
        except Conflict:
            pass
    client.create(CONFIG_MAP, supported_nic_ids_configmap(OPERATOR_NAMESPACE), OPERATOR_NAMESPACE)
    # No webhook server runs here: with the webhooks enabled the API server would refuse our writes.
    client.create(SRIOV_OPERATOR_CONFIG, {
        "metadata": {"name": "default", "namespace": OPERATOR_NAMESPACE},
        "spec": {"enableInjector": False, "enableOperatorWebhook": False, "logLevel": 2,
                 "configDaemonNodeSelector": {"node-role.kubernetes.io/worker": ""}}}, OPERATOR_NAMESPACE)


class Harness:
    def __init__(self, cp: ControlPlane, client: Client, durations: Durations, log_dir: Path) -> None:
        self.cp = cp
        self.client = client
        self.d = durations
        self.lease = LeaseRecorder(client, OPERATOR_NAMESPACE, LEASE_NAME)
        self.replicas = ReplicaSet(cp.kubeconfig, OPERATOR_NAMESPACE, log_dir, durations)
        self.faults: list[FaultRecord] = []
        self.exits: list[dict[str, Any]] = []

    # -- observation -----------------------------------------------------------------------------

    def leader(self) -> Replica | None:
        return self.replicas.by_identity(self.lease.holder())

    def wait_for(self, what: str, check: Any, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return True
            time.sleep(0.1)
        progress(f"  timed out after {timeout:.0f}s waiting for {what}")
        return False

    def wrote_since(self, identity: str, at: float) -> bool:
        return any(w.ok and w.sent >= at and w.identity == identity for w in self.replicas.writes())

    def settle(self) -> Replica | None:
        """Three ready replicas, a live leader that has written, and followers that saw it renew."""
        if not self.replicas.wait_ready(120 + self.d.lease):
            progress("  replicas not ready in time")
        self.note_exits()
        now = time.time()
        if not self.wait_for("a live leader", lambda: self.leader() is not None, 3 * self.d.lease + 30):
            return None
        leader = self.leader()
        assert leader is not None
        self.wait_for("the leader's writes", lambda: self.wrote_since(leader.identity, now - 3600), 30)
        time.sleep(max(2 * self.d.retry, 1.0))
        return self.leader()

    def note_exits(self) -> None:
        self.replicas.restart_exited()
        while self.replicas.exited:
            r = self.replicas.exited.pop(0)
            self.exits.append(self.exit_record(r))
            progress(f"  {r.identity} exited with {r.exit_code}; restarted")

    def exit_record(self, r: Replica) -> dict[str, Any]:
        text = r.log_text()
        return {"identity": r.identity, "exit_code": r.exit_code,
                "leader_election_lost": "leader election lost" in text}

    def wait_takeover(self, fault: FaultRecord, exclude_old: bool) -> bool:
        def taken() -> bool:
            holder = self.lease.holder()
            if not holder or (exclude_old and holder == fault.old_leader):
                return False
            since = fault.apiserver_back_at or fault.at
            return self.wrote_since(holder, since)
        return self.wait_for("a takeover", taken, 3 * self.d.lease + 60)

    # -- faults ----------------------------------------------------------------------------------

    def inject(self, kind: str) -> FaultRecord:
        leader = self.settle()
        if leader is None:
            fault = FaultRecord(kind, time.time(), notes=["no leader before the fault"])
            self.faults.append(fault)
            return fault
        fault = FaultRecord(kind, time.time(), old_leader=leader.identity)
        self.faults.append(fault)
        getattr(self, f"_{kind}")(fault, leader)
        return fault

    def _sigterm_leader(self, fault: FaultRecord, leader: Replica) -> None:
        fault.victim = leader.identity
        fault.at = time.time()
        leader.signal(signal.SIGTERM)
        self.wait_takeover(fault, exclude_old=True)
        fault.victim_exit_code = leader.wait(30)

    def _sigkill_leader(self, fault: FaultRecord, leader: Replica) -> None:
        fault.victim = leader.identity
        fault.at = time.time()
        leader.signal(signal.SIGKILL)
        fault.victim_exit_code = leader.wait(10)
        self.replicas.restart(leader.slot)  # a fresh follower, as a Deployment would start
        self.wait_takeover(fault, exclude_old=True)

    def _sigstop_leader(self, fault: FaultRecord, leader: Replica) -> None:
        fault.victim = leader.identity
        fault.at = time.time()
        leader.signal(signal.SIGSTOP)
        self.wait_takeover(fault, exclude_old=True)
        # Paused for longer than the lease in any case, then resumed: it must exit, not write.
        time.sleep(max(0.0, fault.at + self.d.lease + 2 * self.d.retry - time.time()))
        fault.resumed_at = time.time()
        leader.signal(signal.SIGCONT)
        fault.victim_exit_code = leader.wait(self.d.renew + 30)
        fault.victim_lost_election = "leader election lost" in leader.log_text()
        if fault.victim_exit_code is None:
            fault.notes.append("the resumed old leader did not exit")

    def _apiserver_restart(self, fault: FaultRecord, leader: Replica) -> None:
        fault.at = time.time()
        self.cp.restart_apiserver()
        fault.apiserver_back_at = time.time()
        self.wait_takeover(fault, exclude_old=False)

    def _follower_kill(self, fault: FaultRecord, leader: Replica) -> None:
        follower = next(r for r in self.replicas.slots if r is not leader)
        fault.victim = follower.identity
        fault.at = time.time()
        follower.signal(signal.SIGKILL)
        fault.victim_exit_code = follower.wait(10)
        self.replicas.restart(follower.slot)
        self.wait_takeover(fault, exclude_old=False)

    def report_fault(self, n: int, total: int, fault: FaultRecord) -> dict[str, Any]:
        o = outcome(fault, self.replicas.writes(), self.lease.snapshot())
        took = f"{o['takeover_s']:.2f}s" if o.get("takeover_s") is not None else "none"
        progress(f"fault {n}/{total} {fault.kind}: victim={fault.victim or '-'} old={fault.old_leader} "
                 f"new={o.get('new_leader')} takeover={took}")
        return o


def run(args: argparse.Namespace) -> dict[str, Any]:
    durations = Durations(args.lease_duration, args.renew_deadline, args.retry_period)
    faults = [FAULT_ROUND[i % len(FAULT_ROUND)] for i in range(args.faults)]
    log_dir = Path(args.log_dir) if args.log_dir else Path(tempfile.mkdtemp(prefix="sriovop-failover-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    progress(f"starting the control plane; replica logs in {log_dir}")
    cp = ControlPlane().start()
    harness: Harness | None = None
    workload: Workload | None = None
    try:
        client = Client(load_config(str(cp.kubeconfig)))
        install(client)
        (log_dir / "logs").mkdir(exist_ok=True)
        harness = Harness(cp, client, durations, log_dir / "logs")
        harness.lease.start()
        workload = Workload(Client(load_config(str(cp.kubeconfig))), OPERATOR_NAMESPACE, NAD_NAMESPACE,
                            period=args.workload_period, seed=args.seed)
        workload.start()
        progress(f"3 replicas and the workload started; {len(faults)} faults, lease "
                 f"{durations.lease}/{durations.renew}/{durations.retry}s")
        outcomes = []
        for n, kind in enumerate(faults, 1):
            fault = harness.inject(kind)
            outcomes.append(harness.report_fault(n, len(faults), fault))
        harness.settle()
        workload.stop()
        progress("workload stopped; waiting for the NADs to converge")
        problems, took = wait_converged(client, OPERATOR_NAMESPACE, NAD_NAMESPACE, RESOURCE_PREFIX,
                                        timeout=3 * durations.lease + 60)
        save_inputs(log_dir, harness, client)
        report = assemble(
            config={"lease_duration_s": durations.lease, "renew_deadline_s": durations.renew,
                    "retry_period_s": durations.retry, "faults": len(faults), "quick": args.quick,
                    "workload_period_s": args.workload_period},
            outcomes=outcomes, writes=harness.replicas.writes(), changes=harness.lease.snapshot(),
            problems=problems, durations=durations)
        report.update({
            "workload": dict(sorted(workload.counts.items())),
            "convergence_s": round(took, 2),
            "replica_exits": harness.exits,
            "duration_s": round(time.monotonic() - started, 1),
        })
        return report
    finally:
        if workload is not None:
            workload.stop_event.set()
        if harness is not None:
            harness.lease.stop()
            harness.replicas.stop()
        cp.stop()
        if not args.keep_logs and not args.log_dir:
            shutil.rmtree(log_dir, ignore_errors=True)


def save_inputs(directory: Path, harness: Harness, client: Client) -> None:
    """The files `--analyze` reads, so a run can be analyzed again (and the kind script's format is
    the same as ours)."""
    with (directory / "faults.jsonl").open("w") as f:
        for fault in harness.faults:
            f.write(json.dumps({"kind": fault.kind, "at": fault.at, "victim": fault.victim,
                                "old_leader": fault.old_leader, "resumed_at": fault.resumed_at,
                                "apiserver_back_at": fault.apiserver_back_at,
                                "victim_exit_code": fault.victim_exit_code}) + "\n")
    with (directory / "lease.jsonl").open("w") as f:
        for change in harness.lease.snapshot():
            f.write(json.dumps({"at": change.at, "holder": change.holder}) + "\n")
    (directory / "networks.json").write_text(json.dumps({"items": client.list(SRIOV_NETWORK, OPERATOR_NAMESPACE)}))
    (directory / "nads.json").write_text(json.dumps({"items": client.list(NAD, NAD_NAMESPACE)}))


def assemble(config: dict[str, Any], outcomes: list[dict[str, Any]], writes: list[Write],
             changes: list[LeaseChange], problems: list[str], durations: Durations) -> dict[str, Any]:
    report: dict[str, Any] = {
        "config": config,
        "takeover": summarize(outcomes),
        **writers_report(writes, freezes(outcomes)),
        "all_changes_in_nads": not problems,
        "lost_changes": problems,
        "leadership_changes": len([c for c in changes if c.holder]),
        "faults": outcomes,
    }
    report["targets"] = targets(report, durations)
    return report


def analyze(directory: Path, durations: Durations, target: str, resource_prefix: str) -> dict[str, Any]:
    """Build the same report from files collected elsewhere (a script driving a cluster by kubectl):
    `logs/*.log` (the replicas' JSON logs), `faults.jsonl`, `lease.jsonl` ({"at", "holder"}),
    `networks.json` and `nads.json` (`kubectl get -o json`)."""
    log_texts = {p: p.read_text(errors="replace") for p in sorted((directory / "logs").glob("*.log"))}
    writes = [w for text in log_texts.values() for w in parse_writes(text.splitlines())]
    by_identity = {own_identity(text): text for text in log_texts.values()}
    changes = [LeaseChange(float(r["at"]), str(r.get("holder") or ""), 0)
               for r in _jsonl(directory / "lease.jsonl")]
    outcomes = []
    for r in _jsonl(directory / "faults.jsonl"):
        fault = FaultRecord(str(r["kind"]), float(r["at"]), victim=str(r.get("victim") or ""),
                            old_leader=str(r.get("old_leader") or ""), resumed_at=r.get("resumed_at"),
                            apiserver_back_at=r.get("apiserver_back_at"), victim_exit_code=r.get("victim_exit_code"))
        if fault.kind == "sigstop_leader" and fault.old_leader:
            text = by_identity.get(fault.old_leader, "")
            fault.victim_lost_election = "leader election lost" in text
        outcomes.append(outcome(fault, writes, changes))
    networks = json.loads((directory / "networks.json").read_text()).get("items") or []
    nads = [n for n in json.loads((directory / "nads.json").read_text()).get("items") or []
            if n["metadata"].get("namespace") == target]
    config = {"lease_duration_s": durations.lease, "renew_deadline_s": durations.renew,
              "retry_period_s": durations.retry, "faults": len(outcomes), "analyzed": str(directory)}
    return assemble(config, outcomes, writes, changes, compare(networks, nads, target, resource_prefix), durations)


def own_identity(log_text: str) -> str:
    """The elector identity of the process that wrote this log (its first acquire attempt)."""
    for line in log_text.splitlines():
        if "attempting to acquire leader lease" in line:
            try:
                return str(json.loads(line).get("identity") or "")
            except ValueError:
                continue
    return ""


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def targets(report: dict[str, Any], d: Durations) -> dict[str, Any]:
    take = report["takeover"]

    def median(kind: str) -> float | None:
        value = take.get(kind, {}).get("takeover_median_s")
        return None if value is None else float(value)

    graceful, crash = median("sigterm_leader"), median("sigkill_leader")
    return {
        "graceful_handover_median_le_1s": graceful is not None and graceful <= 1.0,
        "crash_handover_median_le_lease_plus_2s": crash is not None and crash <= d.lease + 2.0,
        "zero_overlapping_writers": report["overlapping_writer_intervals"] == 0,
        "zero_lost_changes": report["all_changes_in_nads"],
        "every_fault_recovered": all(v["took_over"] == v["count"] for v in take.values()),
    }


def run_cluster(args: argparse.Namespace) -> dict[str, Any]:
    """The in-cluster run: the shipped manifests, their lease timings unless given (patched into the
    Deployment's args), `--runs` rounds of every kind."""
    from test.support.failover_incluster import (
        ClusterFailover,
        Timings,
        operator_args,
        set_operator_args,
        with_timings,
    )
    from test.support.incluster import installed_cluster

    timings = Timings(args.lease_duration, args.renew_deadline, args.retry_period)
    started = time.monotonic()
    progress("bringing up a 2-node dev cluster, loading the images, applying manifests/ (minutes)")
    with installed_cluster() as env:
        if timings != Timings():
            progress(f"lease timings {timings.lease}/{timings.renew}/{timings.retry}s patched into the Deployment")
            set_operator_args(env, with_timings(operator_args(env), timings))
        harness = ClusterFailover(env, timings, progress=progress, workload_period=args.workload_period)
        harness.start()
        try:
            for n in range(args.runs):
                progress(f"round {n + 1}/{args.runs}: {', '.join(args.kinds)}")
                for kind in args.kinds:
                    harness.inject(kind)
            report = harness.finish()
        finally:
            harness.stop()
    report["config"].update({"runs_per_kind": args.runs, "quick": args.quick,
                             "workload_period_s": args.workload_period})
    report["targets"] = cluster_targets(report)
    report["duration_s"] = round(time.monotonic() - started, 1)
    return report


def cluster_targets(report: dict[str, Any]) -> dict[str, Any]:
    faults = report["faults"]
    leader_lost = [f for f in faults if f["fault"] != "kubelet_stopped" and not f.get("notes")]
    return {
        "zero_overlapping_writers": report["overlapping_writer_intervals"] == 0,
        "zero_lost_changes": report["all_changes_in_nads"],
        "every_fault_recovered": all(f["took_over"] for f in leader_lost),
        "kubelet_stopped_kept_its_leader": all(not f["leader_changed"] and f["writes_by_others_during_fault"] == 0
                                               for f in faults if f["fault"] == "kubelet_stopped"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="short lease (4/3/0.5 s; 6/4/1 s with --cluster) and one fault of each type")
    parser.add_argument("--cluster", action="store_true",
                        help="in-cluster: a dev cluster with kubelets, the operator installed from manifests/")
    parser.add_argument("--runs", type=int, default=None,
                        help="with --cluster: runs of each kind (default 5; 1 with --quick)")
    parser.add_argument("--kinds", default=",".join(CLUSTER_KINDS),
                        help="with --cluster: comma-separated fault kinds (default all)")
    parser.add_argument("--faults", type=int, default=None, help="number of faults (default 30; 5 with --quick)")
    parser.add_argument("--lease-duration", type=float, default=None)
    parser.add_argument("--renew-deadline", type=float, default=None)
    parser.add_argument("--retry-period", type=float, default=None)
    parser.add_argument("--workload-period", type=float, default=0.25, help="seconds between workload steps")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-dir", default=None, help="keep the replicas' logs here")
    parser.add_argument("--keep-logs", action="store_true", help="keep the temporary log directory")
    parser.add_argument("--analyze", metavar="DIR", default=None,
                        help="no cluster: build the report from files collected elsewhere (see analyze())")
    parser.add_argument("--target-namespace", default=NAD_NAMESPACE, help="with --analyze: the NADs' namespace")
    parser.add_argument("--resource-prefix", default=RESOURCE_PREFIX, help="with --analyze: RESOURCE_PREFIX")
    args = parser.parse_args(argv)
    if args.cluster:
        quick = (6.0, 4.0, 1.0) if args.quick else (15.0, 10.0, 2.0)  # else: the shipped manifests' timings
        args.runs = args.runs or (1 if args.quick else 5)
        args.kinds = [k for k in args.kinds.split(",") if k]
        if unknown := sorted(set(args.kinds) - set(CLUSTER_KINDS)):
            parser.error(f"--kinds: unknown {', '.join(unknown)}; choose from {', '.join(CLUSTER_KINDS)}")
    else:
        quick = (4.0, 3.0, 0.5) if args.quick else (15.0, 10.0, 2.0)
    args.lease_duration = args.lease_duration or quick[0]
    args.renew_deadline = args.renew_deadline or quick[1]
    args.retry_period = args.retry_period or quick[2]
    args.faults = args.faults or (len(FAULT_ROUND) if args.quick else 30)
    configure_logging("warning", "console")  # stdout carries only the JSON report
    if args.analyze:
        report = analyze(Path(args.analyze), Durations(args.lease_duration, args.renew_deadline, args.retry_period),
                         args.target_namespace, args.resource_prefix)
        print(json.dumps(report, indent=2))
        t = report["targets"]
        return 0 if t["zero_overlapping_writers"] and t["zero_lost_changes"] and t["every_fault_recovered"] else 1
    if args.cluster:
        try:
            report = run_cluster(args)
        except (ApiError, OSError, RuntimeError, AssertionError) as exc:
            progress(f"in-cluster harness failed: {exc}")
            return 2
        print(json.dumps(report))  # one line: the last line of the output
        t = report["targets"]
        return 0 if all(t.values()) else 1
    try:
        report = run(args)
    except (ApiError, OSError) as exc:
        progress(f"harness failed: {exc}")
        return 2
    print(json.dumps(report, indent=2))
    t = report["targets"]
    ok = t["zero_overlapping_writers"] and t["zero_lost_changes"] and t["every_fault_recovered"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
