"""Policy convergence at scale: 500 Nodes whose NodeStates report 2 PFs each, one policy selecting all.

Measured (JSON on stdout):
- operator: time from creating (round 1) or changing (rounds 2..) the policy until a watch has seen
  every NodeState's spec carry the new numVfs, with the node policy controller running in a separate
  operator process (namespaced manager, as the operator wires it);
- floor: the same 500 NodeState spec writes issued directly by this script (PUT with the listed
  resourceVersion, the same number of concurrent writers), observed by the same watch;
- ratio operator/floor (median over rounds, fastest round of each, and round 1 alone; target <= 1.3;
  on a shared machine the fastest-round ratio is the least noisy). Floor and operator
  rounds alternate (the operator idle during floor rounds) so both meet the same machine load;
- CPU seconds per round: the operator process vs the floor's writers (wall time on a shared machine is
  noisy; CPU time shows the operator's own overhead);
- RSS of the operator process: after imports, with 500 Nodes and NodeStates cached, after convergence.

    .venv/bin/python test/bench/operator_convergence.py [--nodes 500] [--rounds 5] [--writers 16]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY, SRIOV_NETWORK_NODE_STATE, SRIOV_OPERATOR_CONFIG  # noqa: E402
from sriovop.controllers.node_policy_apply import desired_interfaces, sort_policies  # noqa: E402
from sriovop.runtime.client import Client  # noqa: E402
from sriovop.runtime.config import load_config  # noqa: E402
from sriovop.runtime.kinds import NAMESPACE, NODE  # noqa: E402

NS = "sriov-network-operator"
LABEL = "sriovop.bench/convergence"


def interfaces(i: int) -> list[dict[str, Any]]:
    return [{"name": f"ens{p}f0", "pciAddress": f"0000:{i // 256:02x}:{i % 256:02x}.{p}", "vendor": "8086",
             "deviceID": "158b", "driver": "i40e", "totalvfs": 64, "numVfs": 0, "mtu": 1500, "linkType": "ETH",
             "linkSpeed": "25000 Mb/s", "mac": f"b4:96:91:{i // 256:02x}:{i % 256:02x}:0{p}"} for p in (0, 1)]


def policy(num_vfs: int) -> dict[str, Any]:
    return {"metadata": {"name": "all-nodes", "namespace": NS},
            "spec": {"priority": 99, "nodeSelector": {LABEL: "true"}, "resourceName": "intel_vfs",
                     "numVfs": num_vfs, "deviceType": "netdevice", "isRdma": False, "mtu": 1500,
                     "nicSelector": {"vendor": "8086", "deviceID": "158b"}}}


def cpu_seconds(pid: int | None = None) -> float:
    """User+system CPU time of a process (this one when pid is None)."""
    if pid is None:
        t = os.times()
        return t.user + t.system
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class SpecWatcher:
    """Watches NodeStates; `wait_round(n)` returns when every NodeState's spec has numVfs == n."""

    def __init__(self, client: Client, names: set[str]) -> None:
        self.client = client
        self.names = names
        self.num_vfs: dict[str, int | None] = {}
        self.cond = threading.Condition()
        self.stop = threading.Event()
        self.rv = ""

    def _spec_vfs(self, obj: dict[str, Any]) -> int | None:
        ifaces = (obj.get("spec") or {}).get("interfaces") or []
        vals = {i.get("numVfs") for i in ifaces}
        return vals.pop() if len(ifaces) == 2 and len(vals) == 1 else None

    def start(self) -> None:
        page = self.client.list_page(SRIOV_NETWORK_NODE_STATE, NS)
        with self.cond:
            for obj in page.items:
                self.num_vfs[obj["metadata"]["name"]] = self._spec_vfs(obj)
        self.rv = page.resource_version
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self._watch_once()
            except Exception:
                if self.stop.is_set():
                    return
                time.sleep(0.5)

    def _watch_once(self) -> None:
        if True:
            stream = self.client.watch(SRIOV_NETWORK_NODE_STATE, NS, resource_version=self.rv, timeout_seconds=600)
            for etype, obj in stream:
                self.rv = obj["metadata"].get("resourceVersion", self.rv)
                if etype in ("ADDED", "MODIFIED"):
                    with self.cond:
                        self.num_vfs[obj["metadata"]["name"]] = self._spec_vfs(obj)
                        self.cond.notify_all()
                if self.stop.is_set():
                    stream.close()
                    return

    def wait_round(self, num_vfs: int, timeout: float = 300) -> float:
        deadline = time.monotonic() + timeout
        with self.cond:
            while sum(1 for n in self.names if self.num_vfs.get(n) == num_vfs) < len(self.names):
                left = deadline - time.monotonic()
                if left <= 0:
                    done = sum(1 for n in self.names if self.num_vfs.get(n) == num_vfs)
                    raise TimeoutError(f"only {done}/{len(self.names)} NodeStates reached numVfs {num_vfs}")
                self.cond.wait(left)
        return time.perf_counter()


def run_operator(kubeconfig: str, writers: int) -> None:
    """The operator side, in its own process: the namespaced manager with the policy controller."""
    import structlog
    from prometheus_client import CollectorRegistry

    from sriovop.controllers.node_policy import NodePolicyReconciler
    from sriovop.runtime.manager import Manager

    # stdout is the handshake pipe, which the parent stops reading: logs go to stderr.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))
    print(json.dumps({"event": "imported"}), flush=True)
    sys.stdin.readline()
    client = Client(load_config(kubeconfig))
    mgr = Manager(client, name="bench-operator", namespaces={NS}, registry=CollectorRegistry())
    NodePolicyReconciler(mgr.client, mgr.client, NS, api_reader=mgr.api_reader, write_workers=writers).setup(mgr)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    mgr.start(stop)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--writers", type=int, default=16)
    ap.add_argument("--run-operator", metavar="KUBECONFIG")
    ap.add_argument("--operator-log", help="write the operator process log here")
    args = ap.parse_args()
    if args.run_operator:
        run_operator(args.run_operator, args.writers)
        return

    import structlog

    from sriovop.devcluster import ControlPlane
    from test.support.kube import apply_crds

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    cp = ControlPlane().start()
    proc: subprocess.Popen[str] | None = None
    try:
        apply_crds(cp.kubeconfig, sorted((REPO / "manifests" / "crds").glob("*.yaml")))
        client = Client(load_config(str(cp.kubeconfig)))
        client.create(NAMESPACE, {"metadata": {"name": NS}})
        config = client.create(SRIOV_OPERATOR_CONFIG, {"metadata": {"name": "default", "namespace": NS},
                                                      "spec": {"configDaemonNodeSelector": {LABEL: "true"}}})
        names = [f"worker-{i:04d}" for i in range(args.nodes)]
        owner = {"apiVersion": config["apiVersion"], "kind": config["kind"], "name": "default",
                 "uid": config["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}

        def make(i: int) -> None:
            name = names[i]
            client.create(NODE, {"metadata": {"name": name, "labels": {LABEL: "true", "kubernetes.io/os": "linux"}}})
            st = client.create(SRIOV_NETWORK_NODE_STATE, {
                "metadata": {"name": name, "namespace": NS, "ownerReferences": [owner]}, "spec": {}})
            st["status"] = {"interfaces": interfaces(i), "syncStatus": "Succeeded"}
            client.update_status(SRIOV_NETWORK_NODE_STATE, st)

        t = time.perf_counter()
        with ThreadPoolExecutor(args.writers) as pool:
            list(pool.map(make, range(args.nodes)))
        setup_s = time.perf_counter() - t

        watcher = SpecWatcher(client, set(names))
        watcher.start()
        nodes = {n["metadata"]["name"]: n for n in client.list(NODE)}

        def floor_round(num_vfs: int) -> float:
            """The same 500 spec writes, issued directly with the same concurrency."""
            pol = sort_policies([policy(num_vfs)])
            states = client.list(SRIOV_NETWORK_NODE_STATE, NS)

            def write(st: dict[str, Any]) -> None:
                node = nodes[st["metadata"]["name"]]
                body = {k: v for k, v in st.items() if k != "status"}
                # as small as the operator's (its cache drops managedFields): a floor, not a handicap
                body["metadata"] = {k: v for k, v in st["metadata"].items() if k != "managedFields"}
                body["spec"] = {"interfaces": desired_interfaces(pol, node, st["status"]["interfaces"])}
                client.update(SRIOV_NETWORK_NODE_STATE, body)

            t0 = time.perf_counter()
            with ThreadPoolExecutor(args.writers) as pool:
                list(pool.map(write, states))
            return watcher.wait_round(num_vfs) - t0

        def wait_labels(value: str) -> None:
            deadline = time.monotonic() + 120
            selector = {"sriovnetwork.openshift.io/device-plugin": value}
            while (labelled := len(client.list(NODE, label_selector=selector))) < args.nodes:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"operator did not label every node {value} ({labelled} done)")
                time.sleep(0.5)
            time.sleep(2.0)  # the debounced follow-up sync (caused by the label writes) finishes

        # -- the operator process -----------------------------------------------------------------
        proc = subprocess.Popen(
            [sys.executable, __file__, "--run-operator", str(cp.kubeconfig), "--writers", str(args.writers)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO,
            stderr=open(args.operator_log, "w") if args.operator_log else subprocess.DEVNULL)  # noqa: SIM115
        assert proc.stdin and proc.stdout
        proc.stdout.readline()
        rss_imported = rss_kib(proc.pid)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        wait_labels("Disabled")  # initial sync without a policy is complete
        rss_cached = rss_kib(proc.pid)

        # -- interleaved rounds: floor (operator idle) then operator, so both see the same load ---------
        floor: list[float] = []
        operator: list[float] = []
        floor_cpu: list[float] = []  # this process: the 16 writers and the watcher
        watch_cpu: list[float] = []  # this process during operator rounds: the watcher alone
        operator_cpu: list[float] = []  # the operator process during its rounds
        for r in range(args.rounds):
            c0 = cpu_seconds()
            floor.append(floor_round(2 * r + 1))
            floor_cpu.append(cpu_seconds() - c0)
            num_vfs = 2 * r + 2
            c0, o0 = cpu_seconds(), cpu_seconds(proc.pid)
            t0 = time.perf_counter()
            if r == 0:
                client.create(SRIOV_NETWORK_NODE_POLICY, policy(num_vfs), NS)
            else:
                client.patch(SRIOV_NETWORK_NODE_POLICY, "all-nodes", {"spec": {"numVfs": num_vfs}}, NS)
            operator.append(watcher.wait_round(num_vfs) - t0)
            watch_cpu.append(cpu_seconds() - c0)
            operator_cpu.append(cpu_seconds(proc.pid) - o0)
            if r == 0:
                wait_labels("Enabled")
            else:
                time.sleep(2.0)
        rss_converged = rss_kib(proc.pid)
        watcher.stop.set()

        op_med, floor_med = statistics.median(operator), statistics.median(floor)
        print(json.dumps({
            "benchmark": "operator_convergence",
            "nodes": args.nodes, "pfs_per_node": 2, "writers": args.writers, "rounds": args.rounds,
            "setup_seconds": round(setup_s, 2),
            "operator_seconds": [round(x, 3) for x in operator],
            "floor_seconds": [round(x, 3) for x in floor],
            "first_policy_operator_seconds": round(operator[0], 3),
            "first_policy_floor_seconds": round(floor[0], 3),
            "first_policy_ratio": round(operator[0] / floor[0], 3),
            "operator_median_seconds": round(op_med, 3),
            "floor_median_seconds": round(floor_med, 3),
            "ratio_operator_to_floor": round(op_med / floor_med, 3),
            "ratio_of_fastest_rounds": round(min(operator) / min(floor), 3),
            "target_ratio": 1.3,
            "cpu_seconds_per_round": {
                "operator_process": round(statistics.median(operator_cpu), 3),
                "floor_writers": round(statistics.median(floor_cpu) - statistics.median(watch_cpu), 3),
            },
            "operator_rss_mib": {"after_imports": round(rss_imported / 1024, 1),
                                 "with_500_nodes_cached": round(rss_cached / 1024, 1),
                                 "after_convergence": round(rss_converged / 1024, 1)},
            "cache_growth_mib": round((rss_cached - rss_imported) / 1024, 1),
            "cpu_count": os.cpu_count(),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        }, indent=2))
    finally:
        if proc is not None:
            try:
                if proc.stdin:
                    proc.stdin.write("stop\n")
                    proc.stdin.flush()
                proc.wait(30)
            except Exception:
                proc.kill()
                proc.wait()
        cp.stop()


if __name__ == "__main__":
    main()
