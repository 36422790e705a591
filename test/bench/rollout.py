"""Rollout: one policy change that needs a drain on every node, across N hollow nodes in two pools.

Set-up (test/support/rollout.py): kube-apiserver + etcd with an audit log, the operator (two replicas
with leader election when faults run), N hollow nodes (sriovop dev hollow-nodes' fleet: a real config
daemon per node on its own simulated host, each apply taking --apply-delay seconds of VF creation) in
pools `bulk` (N-10 nodes, maxUnavailable 10%) and `canary` (10 nodes, maxUnavailable 1), and a first
policy applied everywhere. Then, per round, the policy's numVfs changes (a drain on every node):
- rollout_ratio_<N>_nodes: seconds from the policy write until every NodeState is Succeeded at the new
  numVfs with its drain annotations Idle and no Node cordoned (an independent watcher's view), over the
  ideal: the slowest pool's waves (ceil(size / maxUnavailable)) times the apply delay. Median of rounds.
- rollout_max_unavailable_exceeded_<N>_nodes: the most nodes of a pool holding a drain slot at once, as
  the watcher saw them, beyond the pool's maxUnavailable (target 0).
- rollout_requests_per_node_<N>_nodes: requests during the rollout per node, by client, verb and
  resource (the API server's audit log; watches counted when they end).
- operator CPU seconds per rollout and RSS after it; the daemons' requests at rest (target 0/min
  beyond their watches), measured over --rest-seconds after the last round.
- faults (--faults, at the smallest size unless --fault-nodes): each its own rollout with the same
  watcher, landing once 30% of the fleet is configured (FAULT_AT) - the leader operator SIGKILLed,
  kube-apiserver restarted, 5% of the daemons SIGKILLed and restarted, a draining node deleted, the
  policy changed again. Each prints a JSON line with its recovery time (the fault until the next
  drain slot is granted, to any node - for the API server restart, the next one granted once it
  serves again; for the policy changed again, the first granted to a node whose NodeState asks for
  the new value; for the daemons, until every restarted daemon has synced; for the deletion, until
  the deleted node's NodeState is Idle) and must end configured, uncordoned, never over maxUnavailable.

    .venv/bin/python test/bench/rollout.py [--nodes 100,500,1000,2000,5000] [--rounds 3] [--apply-delay 20]
        [--faults] [--fault-nodes 100] [--per-process 100] [--quick]
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchlib
from benchlib import Figure

from sriovop.hollow.supervisor import Slice
from sriovop.stopsignals import unwind_on_signals
from test.support.rollout import BENCH_USER_AGENT, FIRST_VFS, NS, RolloutPlan, RolloutScenario
from test.support.rollout_audit import AuditLog, per_client

#: numVfs values the rounds alternate between (FIRST_VFS is the first policy's).
ROUND_VFS = (4, FIRST_VFS)
#: What one hollow node costs, to tell which sizes a machine can run (docs/rollout.md): memory across
#: its host and daemon processes (about 2.6 MiB of RSS at 500 and 1,000 nodes, with room for the
#: kernel's network namespace and veths), and nodes per core: a quiet 2-core machine rolled 1,000 nodes
#: once the fleet's workers ran niced with a longer GIL switch interval and the daemons stopped decoding
#: every link attribute (before that, 1,000 nodes held the load average past 400 and did not finish).
NODE_MIB = 4
NODES_PER_CORE = 500
#: The node deletion goes last: it shrinks the fleet the later runs would wait for.
FAULTS = ("leader_killed", "apiserver_restarted", "daemons_killed", "policy_changed_again", "node_deleted")
#: The share of the fleet configured with the change when a fault lands.
FAULT_AT = 0.3


def _operator_pid(sc: RolloutScenario) -> int:
    return sc.leader().proc.pid


def _exceeded(max_in_flight: dict[str, int], limits: dict[str, int]) -> int:
    return max([0, *(seen - limits.get(pool, 0) for pool, seen in max_in_flight.items())])


def _fleet_cpu(sc: RolloutScenario, process: Callable[[Slice], Any]) -> float:
    """CPU seconds of one of each slice's processes (its daemons or its simulated hosts), summed."""
    assert sc.fleet is not None
    return sum(benchlib.cpu_seconds(p.pid) for p in map(process, sc.fleet.slices) if p.poll() is None)


def _daemon_cpu(sc: RolloutScenario) -> float:
    return _fleet_cpu(sc, lambda s: s.daemons)


def _control_plane_cpu(sc: RolloutScenario) -> float:
    """kube-apiserver's and etcd's CPU seconds: what the rollout's requests and watches cost the server
    side, which on a real cluster runs on the control plane, not on the nodes the hollow fleet stands in
    for."""
    assert sc.cp is not None
    procs = (sc.cp.apiserver, sc.cp.etcd)
    return sum(benchlib.cpu_seconds(p.pid) for p in procs if p is not None and p.poll() is None)


def _hosts_cpu(sc: RolloutScenario) -> float:
    return _fleet_cpu(sc, lambda s: s.sims)


def _daemon_rss_mib(sc: RolloutScenario) -> float:
    assert sc.fleet is not None
    total = sum(benchlib.rss_kib(p.pid) for s in sc.fleet.slices for p in (s.daemons, s.sims) if p.poll() is None)
    return round(total / 1024, 1)


def rounds(sc: RolloutScenario, plan: RolloutPlan, n_rounds: int, audit: AuditLog) -> dict[str, Any]:
    assert sc.watcher is not None
    samples: list[dict[str, Any]] = []
    for r in range(n_rounds):
        num_vfs = ROUND_VFS[r % len(ROUND_VFS)]
        sc.watcher.reset_max()
        pid = _operator_pid(sc)
        cpu0, dcpu0, off0 = benchlib.cpu_seconds(pid), _daemon_cpu(sc), audit.mark()
        ccpu0, hcpu0 = _control_plane_cpu(sc), _hosts_cpu(sc)
        t0 = sc.change(num_vfs)
        t1 = sc.watcher.wait_configured(num_vfs, timeout=max(900.0, 6 * plan.ideal_seconds()), expect=plan.nodes)
        time.sleep(2.0)  # the last requests reach the audit log
        counts = audit.count(off0, audit.mark())
        sample = {"seconds": round(t1 - t0, 2), "max_in_flight": dict(sc.watcher.max_in_flight),
                  "operator_cpu_seconds": round(benchlib.cpu_seconds(pid) - cpu0, 2),
                  "daemons_cpu_seconds": round(_daemon_cpu(sc) - dcpu0, 2),
                  "hosts_cpu_seconds": round(_hosts_cpu(sc) - hcpu0, 2),
                  "apiserver_etcd_cpu_seconds": round(_control_plane_cpu(sc) - ccpu0, 2),
                  "requests": {c: per_client(counts, c, plan.nodes) for c in ("daemons", "operator")},
                  "requests_total_per_node": {c: round(sum(n for (w, _v, _r), n in counts.items() if w == c)
                                                       / plan.nodes, 2) for c in ("daemons", "operator")},
                  "load_average": [round(x, 1) for x in os.getloadavg()]}
        samples.append(sample)
        print(f"rollout {plan.nodes} nodes round {r + 1}: {sample['seconds']} s (ideal {plan.ideal_seconds()} s), "
              f"max in flight {sample['max_in_flight']}", file=sys.stderr, flush=True)
    return {"samples": samples}


def at_rest(sc: RolloutScenario, audit: AuditLog, seconds: float) -> dict[str, Any]:
    time.sleep(10.0)  # the last rollout's stragglers (status refreshes) settle
    off0, dcpu0 = audit.mark(), _daemon_cpu(sc)
    time.sleep(seconds)
    counts = audit.count(off0, audit.mark())
    daemons = Counter({f"{v} {r}": n for (w, v, r), n in counts.items() if w == "daemons"})
    beyond_watches = sum(n for k, n in daemons.items() if not k.startswith("watch "))
    return {"seconds": seconds, "daemon_requests": dict(daemons),
            "daemon_requests_per_min_beyond_watches": round(beyond_watches * 60 / seconds, 2),
            "daemons_cpu_seconds_per_min": round((_daemon_cpu(sc) - dcpu0) * 60 / seconds, 2)}


def fault_run(sc: RolloutScenario, plan: RolloutPlan, fault: str, num_vfs: int) -> dict[str, Any]:
    assert sc.watcher is not None and sc.cp is not None
    timeout = max(900.0, 8 * plan.ideal_seconds())
    if num_vfs == sc.num_vfs:  # e.g. after "policy changed again" ended where this run would go: no drain
        num_vfs = 3 + (num_vfs - 2) % 3  # 3 -> 4 -> 5 -> 3, within every hollow NIC's VFs
    sc.watcher.reset_max()
    t0 = sc.change(num_vfs)
    sc.wait_progress(num_vfs, FAULT_AT, timeout)
    final, detail, recovered = num_vfs, "", 0.0
    tf = time.perf_counter()
    if fault == "leader_killed":
        detail = f"replica {sc.kill_leader()} SIGKILLed, a new replica started"
    elif fault == "apiserver_restarted":
        sc.cp.restart_apiserver()
        detail = f"kube-apiserver stopped and started on the same etcd ({time.perf_counter() - tf:.1f} s down)"
        recovered = sc.watcher.first_grant_after(time.perf_counter(), timeout)  # once it serves again
    elif fault == "daemons_killed":
        killed = sc.kill_daemons(0.05)
        assert sc.fleet is not None
        sc.fleet.wait_daemons(timeout)
        recovered = time.perf_counter()  # every restarted daemon's informers synced again
        detail = f"{len(killed)} daemons SIGKILLed and restarted"
    elif fault == "policy_changed_again":
        final = num_vfs + 1
        sc.change(final)
        detail = f"numVfs {num_vfs} -> {final} with {FAULT_AT:.0%} of the nodes configured for the first change"
    if fault == "node_deleted":
        gone = sc.delete_draining_node(timeout)
        tf = time.perf_counter()
        sc.watcher.wait_for(lambda w: gone not in w.holders.get("bulk", set()) and (
            gone not in w.states or ((w.states[gone]["metadata"].get("annotations") or {}).get(
                "sriovnetwork.openshift.io/current-state") == "Idle")), timeout, f"{gone} released")
        recovered = time.perf_counter()
        detail = f"Node {gone} deleted while holding a drain slot"
        sc.deleted.append(gone)
    elif fault == "policy_changed_again":  # the first drain for the new value: the change under way
        recovered = sc.watcher.first_grant_after(tf, timeout, num_vfs=final)
    else:
        recovered = recovered or sc.watcher.first_grant_after(tf, timeout)
    t1 = sc.watcher.wait_configured(final, timeout, expect=plan.nodes - len(sc.deleted))
    out = {"fault": fault, "nodes": plan.nodes, "recovery_seconds": round(recovered - tf, 2),
           "rollout_seconds": round(t1 - t0, 2), "max_in_flight": dict(sc.watcher.max_in_flight),
           "limits": plan.limits, "max_unavailable_exceeded": _exceeded(sc.watcher.max_in_flight, plan.limits),
           "cordoned_at_end": len(sc.watcher.cordoned), "detail": detail}
    print(json.dumps(out), flush=True)
    return out


def measure(n: int, args: Any, faults: bool, work: Path) -> dict[str, Any]:
    # With faults, a daemons process holds 5% of the fleet: "5% of the daemons killed" is one process.
    per_process = min(args.per_process, max(1, math.ceil(0.05 * n))) if faults else args.per_process
    plan = RolloutPlan(nodes=n, canary=min(10, max(1, n // 5)), apply_delay=args.apply_delay,
                       per_process=per_process, operators=2 if faults else 1, requeue_after=args.requeue_after,
                       clients=args.clients, first_wave=args.first_wave)
    print(f"rollout: {n} nodes, pools {plan.pools}, limits {plan.limits}, ideal {plan.ideal_seconds()} s",
          file=sys.stderr, flush=True)
    sc = RolloutScenario(work / f"n{n}", plan)
    started = time.monotonic()
    try:
        sc.start()
        setup = time.monotonic() - started
        assert sc.cp is not None
        audit = AuditLog(sc.cp.dir / "audit.log", BENCH_USER_AGENT)
        result: dict[str, Any] = {"nodes": n, "pools": plan.pools, "limits": plan.limits,
                                  "apply_delay": plan.apply_delay, "ideal_seconds": plan.ideal_seconds(),
                                  "setup_seconds": round(setup, 1), "per_process": plan.per_process,
                                  "clients": plan.clients, "requeue_after": plan.requeue_after,
                                  "load_average": list(os.getloadavg())}
        result.update(rounds(sc, plan, args.rounds, audit))
        result["rest"] = at_rest(sc, audit, args.rest_seconds)
        result["operator_rss_mib"] = round(benchlib.rss_kib(_operator_pid(sc)) / 1024, 1)
        result["hollow_rss_mib"] = _daemon_rss_mib(sc)
        result["operator_restarts"] = list(sc.operator_restarts)
        if faults:
            result["faults"] = [fault_run(sc, plan, f, 3 + i % 3) for i, f in enumerate(args.fault_list)]
        return result
    finally:
        sc.stop()


def figures_for(r: dict[str, Any]) -> list[Figure]:
    n, samples = r["nodes"], r["samples"]
    seconds = statistics.median(s["seconds"] for s in samples)
    exceeded = max(_exceeded(s["max_in_flight"], r["limits"]) for s in samples)
    per_node = statistics.median(s["requests_total_per_node"]["daemons"] for s in samples)
    op_per_node = statistics.median(s["requests_total_per_node"]["operator"] for s in samples)
    figs = [
        Figure(f"rollout_ratio_{n}_nodes", round(seconds / r["ideal_seconds"], 3), "x", baseline=r["ideal_seconds"],
               baseline_what=f"ideal seconds: slowest pool's waves x apply delay {r['apply_delay']} s "
                             f"(pools {r['pools']}, maxUnavailable {r['limits']})",
               target=1.3, target_what="rollout / ideal <= 1.3",
               note=f"median of {len(samples)}: {seconds} s (all: {[s['seconds'] for s in samples]})"),
        Figure(f"rollout_max_unavailable_exceeded_{n}_nodes", exceeded, "nodes", target=0,
               target_what="no pool ever over its maxUnavailable (independent watcher)",
               note=f"most holding a slot at once per round: {[s['max_in_flight'] for s in samples]}"),
        Figure(f"rollout_requests_per_node_{n}_nodes", per_node, "requests",
               baseline=op_per_node, baseline_what="the operator's requests per node in the same rollout",
               note="daemons, per node, by verb and resource: "
                    + json.dumps(samples[len(samples) // 2]["requests"]["daemons"])),
        Figure(f"rollout_operator_cpu_seconds_{n}_nodes",
               statistics.median(s["operator_cpu_seconds"] for s in samples), "s",
               note=f"operator requests per node: {json.dumps(samples[len(samples) // 2]['requests']['operator'])}"),
        Figure(f"rollout_operator_rss_mb_{n}_nodes", r["operator_rss_mib"], "MiB", note="after the rollouts"),
        Figure(f"rollout_apiserver_etcd_cpu_seconds_{n}_nodes",
               statistics.median(s["apiserver_etcd_cpu_seconds"] for s in samples), "s",
               note="kube-apiserver and etcd per rollout, serving the operator, the daemons and the watcher; "
                    "hollow daemons / their hosts: "
                    f"{statistics.median(s['daemons_cpu_seconds'] for s in samples)} / "
                    f"{statistics.median(s['hosts_cpu_seconds'] for s in samples)} s"),
        rest_figure(r),
    ]
    for f in r.get("faults", []):
        figs.append(Figure(f"rollout_fault_{f['fault']}_recovery_seconds_{n}_nodes", f["recovery_seconds"], "s",
                           note=f"{f['detail']}; whole rollout {f['rollout_seconds']} s"))
        figs.append(Figure(f"rollout_fault_{f['fault']}_max_unavailable_exceeded_{n}_nodes",
                           f["max_unavailable_exceeded"] + f["cordoned_at_end"], "nodes", target=0,
                           target_what="never over maxUnavailable, nothing left cordoned",
                           note=f"most holding a slot at once: {f['max_in_flight']}"))
    return figs


def rest_figure(r: dict[str, Any]) -> Figure:
    """The hollow daemons' requests at rest, after the last round (after the first policy with --rounds 0)."""
    after = "the rollouts" if r.get("samples") else "the first policy, no rollout round run (--rounds 0)"
    return Figure(f"rollout_daemons_rest_requests_per_min_{r['nodes']}_nodes",
                  r["rest"]["daemon_requests_per_min_beyond_watches"], "req/min", target=0,
                  target_what="hollow daemons at rest: no request beyond their watches",
                  note=f"over {r['rest']['seconds']} s after {after}, the daemons' drift check every "
                       f"{r['requeue_after']} s (--requeue-after); all daemon requests: "
                       f"{r['rest']['daemon_requests']}; daemons' CPU {r['rest']['daemons_cpu_seconds_per_min']} s/min")


def unreached(n: int, why: str, measured: list[dict[str, Any]]) -> list[Figure]:
    """The figures of a size not measured here, with why and the largest size that was (the floor)."""
    done = [r for r in measured if r.get("samples")]
    floor = ""
    if done:
        top = max(done, key=lambda r: r["nodes"])
        seconds = statistics.median(s["seconds"] for s in top["samples"])
        floor = (f"; largest size measured in this run: {top['nodes']} nodes, {seconds} s against an ideal of "
                 f"{top['ideal_seconds']} s (ratio {round(seconds / top['ideal_seconds'], 3)})")
    note = f"not measured: {why}{floor}"
    return [Figure(f"rollout_ratio_{n}_nodes", None, "x", target=1.3, target_what="rollout / ideal <= 1.3", note=note),
            Figure(f"rollout_max_unavailable_exceeded_{n}_nodes", None, "nodes", target=0,
                   target_what="no pool ever over its maxUnavailable (independent watcher)", note=note),
            Figure(f"rollout_requests_per_node_{n}_nodes", None, "requests", note=note)]


def fits_here(n: int) -> str | None:
    """Why this machine cannot run `n` hollow nodes (None when it can): each node holds about
    NODE_MIB of memory across its host and daemon processes, and a core runs NODES_PER_CORE of them
    through a rollout (measured; see docs/rollout.md)."""
    cores = os.cpu_count() or 1
    mem_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    if n > NODES_PER_CORE * cores:
        return f"{n} nodes need about {math.ceil(n / NODES_PER_CORE)} cores; this machine has {cores}"
    if n * NODE_MIB > mem_mib // 2:
        return f"{n} nodes need about {n * NODE_MIB} MiB; this machine has {mem_mib} MiB"
    return None


def main() -> None:
    parser = benchlib.arg_parser(__doc__)
    # 100, 500 and 1,000 run on a 2-core machine; 2,000 and 5,000 are reported as not measured there
    # (fits_here).
    parser.add_argument("--nodes", default="100,500,1000,2000,5000")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rollouts per size (0: set the fleet up and measure it at rest only, for a size "
                             "whose rollout this machine cannot hold)")
    parser.add_argument("--apply-delay", type=float, default=20.0)
    parser.add_argument("--per-process", type=int, default=100)
    parser.add_argument("--requeue-after", type=float, default=30.0)
    parser.add_argument("--clients", choices=("shared", "per-daemon"), default="shared",
                        help="the hollow daemons' API clients: one per worker process or one per daemon")
    parser.add_argument("--rest-seconds", type=float, default=120.0)
    parser.add_argument("--first-wave", type=int, default=250,
                        help="nodes given the first policy at a time, before anything is measured (0: all at once)")
    parser.add_argument("--faults", action="store_true", help="also run each fault mid-rollout")
    parser.add_argument("--fault-nodes", type=int, help="the size the faults run at (default: the smallest)")
    parser.add_argument("--fault-list", default=",".join(FAULTS))
    parser.add_argument("--anywhere", action="store_true",
                        help="run every size even where this machine's cores or memory look too small for it")
    parser.add_argument("--work-dir", type=Path, help="where control planes and fleets go (default: a temp dir)")
    args = parser.parse_args()
    args.fault_list = [f for f in args.fault_list.split(",") if f]
    unknown = set(args.fault_list) - set(FAULTS)
    if unknown:
        parser.error(f"--fault-list: unknown {sorted(unknown)}; known: {', '.join(FAULTS)}")
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    # SIGTERM (a timeout, make bench interrupted) unwinds like Ctrl-C: fleets, operators and control
    # planes are stopped by their finally blocks instead of leaking network namespaces, and a second
    # signal does not cut that short.
    unwind_on_signals("rollout")
    started = benchlib.machine()
    if args.quick:  # a smoke run (make test): checks the benchmark runs, not a figure to quote; the faults
        # run at small N in test/integration/hollow/ instead
        sizes, args.rounds, args.apply_delay, args.rest_seconds, args.per_process = [20], 1, 1.0, 20.0, 10
        args.faults, args.fault_nodes = False, None
    else:
        sizes = [int(n) for n in args.nodes.split(",")]
    fault_size = args.fault_nodes or (min(sizes) if args.faults else None)
    results: list[dict[str, Any]] = []
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="rollout-", dir=args.work_dir) as work:
        for n in sizes:
            why = None if args.anywhere else fits_here(n)
            if why is not None:
                print(f"rollout: {n} nodes skipped: {why}", file=sys.stderr, flush=True)
                results.append({"nodes": n, "skipped": why})
                continue
            try:
                results.append(measure(n, args, faults=n == fault_size, work=Path(work)))
            except (RuntimeError, TimeoutError, OSError) as exc:  # the size did not come up here
                print(f"rollout: {n} nodes failed: {exc}", file=sys.stderr, flush=True)
                results.append({"nodes": n, "error": str(exc)[:2000]})
        if fault_size is not None and fault_size not in sizes:
            args.rounds = 1
            results.append(measure(fault_size, args, faults=True, work=Path(work)))
    for r in results:
        if r.get("samples"):
            figures += figures_for(r)
        elif "rest" in r:  # --rounds 0: the fleet set up and measured at rest only
            figures += [*unreached(r["nodes"], "no rollout round run (--rounds 0)", results), rest_figure(r)]
        else:
            figures += unreached(r["nodes"], r.get("skipped") or f"the run failed: {r.get('error', '')[:300]}", results)
    exceeded = [f.value for f in figures if "max_unavailable_exceeded" in f.name and f.value is not None]
    figures.append(Figure("rollout_max_unavailable_exceeded", max(exceeded, default=None), "nodes", target=0,
                          target_what="over every size, round and fault"))
    benchlib.emit("rollout", figures, {"namespace": NS, "sizes": results}, args.out, started)


if __name__ == "__main__":
    main()
