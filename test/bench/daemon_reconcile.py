"""Benchmark: the config daemon on a simulated host with 8 PFs x 64 VFs (JSON on stdout).

- apply_floor_s: the host layer's apply of the spec, called directly (no API server, no daemon);
- daemon_apply_s: NodeState spec written → syncStatus Succeeded through a running daemon (same spec,
  fresh simulator), i.e. the floor plus discovery, plugins, status writes and the API round trips;
- steady_pass_ms: one reconcile pass of a configured node with nothing to do (what runs every 30 s):
  median over repeated calls;
- per_vf_overhead_ms: (daemon_apply_s - apply_floor_s) / VFs.

    .venv/bin/python -m test.bench.daemon_reconcile [--pfs 8] [--vfs 64] [--passes 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import benchlib  # noqa: F401  (puts the repository on sys.path: runnable as docs/benchmarks.md says)

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.devcluster import ControlPlane
from sriovop.host import Applier, Host
from sriovop.logsetup import configure_logging
from sriovop.runtime.controller import Request
from sriovop.sim.host import SimHost
from test.support.daemon_harness import client_for, pf_spec, prepare_cluster, running_daemon, wait_sync
from test.support.host_sim import FAST
from test.support.kube import apply_crds, create_namespace
from test.support.poll import wait_for

REPO = Path(__file__).resolve().parents[2]
NS = "sriov-network-operator"


def spec_for(sim: SimHost, vfs: int) -> list[dict]:
    return [pf_spec(pf, vfs, mtu=9000) for pf in sim.describe()["pfs"]]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pfs", type=int, default=8)
    ap.add_argument("--vfs", type=int, default=64)
    ap.add_argument("--passes", type=int, default=20)
    args = ap.parse_args()
    configure_logging("error", "console")
    nics = ["xxv710:2"] * (args.pfs // 2)
    out: dict[str, object] = {"pfs": args.pfs, "vfs_per_pf": args.vfs, "total_vfs": args.pfs * args.vfs}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        floors: list[float] = []

        def floor_run(i: int) -> None:
            with SimHost(root / f"floor{i}", nics) as sim, Host(sim.root, kernel=sim.access) as host:
                spec = spec_for(sim, args.vfs)
                host.discover()  # as the daemon has, before its spec arrives (netlink socket, caches)
                t0 = time.perf_counter()
                Applier(host, options=FAST).apply(spec)
                floors.append(time.perf_counter() - t0)

        # Floor runs before and after the daemon run (shared machines are noisy); their median is used.
        floor_run(0)
        floor_run(1)

        with ControlPlane() as cp:
            apply_crds(cp.kubeconfig, sorted((REPO / "manifests" / "crds").glob("*.yaml")))
            create_namespace(cp.kubeconfig, NS)
            client = client_for(cp.kubeconfig)
            with SimHost(root / "node", nics) as sim:
                spec = spec_for(sim, args.vfs)
                prepare_cluster(client, NS, "bench-node")
                with running_daemon(cp.kubeconfig, NS, "bench-node", sim.root, requeue_after=3600.0) as daemon:
                    wait_sync(client, NS, "bench-node", consts.SYNC_STATUS_SUCCEEDED)
                    t0 = time.perf_counter()
                    client.patch(SRIOV_NETWORK_NODE_STATE, "bench-node", {"spec": {"interfaces": spec}}, namespace=NS)
                    wait_for(lambda: all(p.numvfs == args.vfs for p in sim.kernel.pfs.values()), 300, "VFs",
                             interval=0.01)
                    wait_sync(client, NS, "bench-node", consts.SYNC_STATUS_SUCCEEDED, timeout=300)
                    out["daemon_apply_s"] = round(time.perf_counter() - t0, 3)
                    assert daemon.reconciler is not None
                    writes = daemon.reconciler.status.writes
                    times = []
                    for _ in range(args.passes):
                        t0 = time.perf_counter()
                        daemon.reconciler.reconcile(Request(NS, "bench-node"))
                        times.append((time.perf_counter() - t0) * 1000)
                    out["steady_pass_ms"] = round(statistics.median(times), 2)
                    out["steady_pass_status_writes"] = daemon.reconciler.status.writes - writes
        floor_run(2)
        floor_run(3)
    out["apply_floor_s"] = round(statistics.median(floors), 3)  # the median, not the best: the daemon ran once
    out["apply_floor_runs_s"] = [round(f, 3) for f in floors]
    vfs = args.pfs * args.vfs
    out["per_vf_overhead_ms"] = round((float(out["daemon_apply_s"]) - float(out["apply_floor_s"])) * 1000 / vfs, 3)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
