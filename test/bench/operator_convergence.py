"""Operator: one policy change that touches every NodeState, against the same writes by a plain client.

What it measures, at N nodes of a generated cluster (test/bench/clustergen.py: varied labels, 2-8 PFs
of mixed vendors per NodeState; the policy selects the E810 port ens1f0 that every worker has):
- operator: from the policy write (create in the warm-up round, numVfs patch after) until a watch in
  this process has seen every worker's NodeState spec carry the new numVfs; the node policy controller
  runs in a separate operator process: by default `sriovop operator` as deployed (every controller,
  leader election, the lease-fenced writer), which is what a user's cluster runs, and whose start-up
  pass (the drain controller annotating every Node and NodeState) is waited for by its result before
  the first round; `--policy-controller-only`: the namespaced manager with the policy controller alone
  (16 writers), the work a policy change waits on;
- floor: the same N NodeState spec writes (PUT with the listed resourceVersion, the same body the
  operator writes, 16 threads) by this process, seen by the same watch - with the operator process
  stopped (exited), so nothing of ours spends CPU during the floor; it is started again afterwards
  and the next operator round begins once it is idle (synced, the policy's numVfs restored);
- rounds alternate floor, operator, floor, operator ... after one warm-up round of each; the figure is
  median operator / median floor (min/max of both in details). Target: <= 1.3.
- memory: operator RSS after convergence (once it has been idle 5 s: it gives freed heap back to the
  OS when a burst of writes pauses), and the JSON size of what its caches hold (the Nodes,
  NodeStates and policies, as listed, with and without managedFields, which the informers drop);
  at each N, so the growth from 500 to 5,000 shows. Target: RSS <= 80 MiB at 5,000 nodes. The floor
  beside it: a bare interpreter holding the same trimmed objects as dicts (rss_floor.py).
- the operator process imports only what the images install (image_packages.py: the development
  virtualenv's lint and test tools, e.g. `rich`, which structlog loads when it is there, fail to import
  in it as in the image);
- the operator process reaches the API server as it does in a pod: a service account's bound token
  and the cluster CA in a service-account directory, $KUBERNETES_SERVICE_HOST/PORT, no kubeconfig
  (so its RSS is what a deployed operator's is: the official client is imported for kubeconfig
  files only).

    .venv/bin/python test/bench/operator_convergence.py [--nodes 500,5000] [--rounds 5] [--writers 16] [--quick]
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import benchlib
import clustergen
import seed
from benchlib import Figure, Stat

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY, SRIOV_NETWORK_NODE_STATE, SRIOV_OPERATOR_CONFIG
from sriovop.controllers.node_policy_apply import desired_interfaces, sort_policies
from sriovop.operator.cache_trim import CACHE_TRANSFORMS
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.kinds import CLUSTER_ROLE_BINDING, NODE, SERVICE_ACCOUNT

NS = clustergen.NS
#: `sriovop operator` renders its DaemonSets with these; nothing pulls them on a bare control plane.
BENCH_IMAGES = {name: "example.com/sriovop:bench" for name in (
    "SRIOV_NETWORK_CONFIG_DAEMON_IMAGE", "SRIOV_DEVICE_PLUGIN_IMAGE", "SRIOV_CNI_IMAGE",
    "SRIOV_INFINIBAND_CNI_IMAGE", "SRIOV_NETWORK_WEBHOOK_IMAGE", "NETWORK_RESOURCES_INJECTOR_IMAGE")}
REPO = benchlib.REPO


def policy(num_vfs: int) -> dict[str, Any]:
    return {"metadata": {"name": "all-workers", "namespace": NS},
            "spec": {"priority": 99, "nodeSelector": {clustergen.WORKER: ""}, "resourceName": "e810_vfs",
                     "numVfs": num_vfs, "deviceType": "netdevice", "isRdma": False, "mtu": 1500,
                     "nicSelector": {"vendor": "8086", "deviceID": "159b", "pfNames": ["ens1f0"]}}}


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
        return next((i.get("numVfs") for i in ifaces if i.get("name") == "ens1f0"), None)

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
        """One watch; _run reconnects from the last RV."""
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

    def wait_round(self, num_vfs: int, timeout: float = 300, check: Callable[[], None] = lambda: None) -> float:
        """`check` raises when the writer the round waits for is gone (looked at every 2 s): an operator
        that lost its lease exits, and nobody would finish the round."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while sum(1 for n in self.names if self.num_vfs.get(n) == num_vfs) < len(self.names):
                left = deadline - time.monotonic()
                if left <= 0:
                    done = sum(1 for n in self.names if self.num_vfs.get(n) == num_vfs)
                    raise TimeoutError(f"only {done}/{len(self.names)} NodeStates reached numVfs {num_vfs}")
                check()
                self.cond.wait(min(left, 2.0))
        return time.perf_counter()


def service_account_dir(client: Client, ca_file: Path, into: Path) -> Path:
    """A service-account directory as kubelet mounts it (token, ca.crt) for a cluster-admin account."""
    client.create(SERVICE_ACCOUNT, {"metadata": {"name": "bench-operator", "namespace": NS}}, NS)
    client.create(CLUSTER_ROLE_BINDING, {
        "metadata": {"name": "bench-operator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "bench-operator", "namespace": NS}]})
    resp = client.request("POST", f"/api/v1/namespaces/{NS}/serviceaccounts/bench-operator/token",
                          body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                "spec": {"expirationSeconds": 86400}})
    into.mkdir(parents=True, exist_ok=True)
    (into / "token").write_text(json.loads(resp.data)["status"]["token"])
    (into / "ca.crt").write_bytes(ca_file.read_bytes())
    return into


def run_operator(sa_dir: str, writers: int, full: bool) -> None:
    """The operator side, in its own process, configured in-cluster (the parent set
    $KUBERNETES_SERVICE_HOST/PORT; `sa_dir` holds the token). `full`: `sriovop operator` itself, as
    deployed (every controller, leader election, the fenced writer); else the namespaced manager with
    the policy controller alone (`writers` NodeState writers)."""
    import structlog
    from prometheus_client import CollectorRegistry

    from sriovop.runtime import incluster

    if full:
        import os
        import signal

        from sriovop.commands.operator import command

        print(json.dumps({"event": "imported"}), flush=True)
        sys.stdin.readline()
        incluster.SERVICE_ACCOUNT_DIR = Path(sa_dir)
        # `stop` on stdin ends it the way kubelet does, with SIGTERM (handled in the main thread)
        threading.Thread(target=lambda: (sys.stdin.readline(), os.kill(os.getpid(), signal.SIGTERM)),
                         daemon=True).start()
        command.main(["--namespace", NS, "--leader-elect", "--metrics-bind-address", "0",
                      "--health-probe-bind-address", "0", "--log-level", "warning"], standalone_mode=False)
        return
    from sriovop.controllers.node_policy import NodePolicyReconciler
    from sriovop.runtime.heap import limit_malloc_arenas
    from sriovop.runtime.manager import Manager

    limit_malloc_arenas()  # as `sriovop operator` does first
    # stdout is the handshake pipe, which the parent stops reading: logs go to stderr.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))
    print(json.dumps({"event": "imported"}), flush=True)
    sys.stdin.readline()
    incluster.SERVICE_ACCOUNT_DIR = Path(sa_dir)
    rest = load_config()
    assert rest.source == "in-cluster", rest.source
    client = Client(rest)
    mgr = Manager(client, name="bench-operator", namespaces={NS}, registry=CollectorRegistry(),
                  cache_transforms=CACHE_TRANSFORMS)
    NodePolicyReconciler(mgr.client, mgr.client, NS, api_reader=mgr.api_reader, write_workers=writers).setup(mgr)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    mgr.start(stop)


class OperatorProcess:
    """The operator side in its own process, stopped (exited) during floor rounds and started again.

    (Pausing it with SIGSTOP instead left its watches stalled for minutes after SIGCONT.)"""

    def __init__(self, sa_dir: Path, port: int, writers: int, log: Path | None, full: bool) -> None:
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env.update(KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=str(port), NAMESPACE=NS,
                   RESOURCE_PREFIX="openshift.io", **BENCH_IMAGES)
        self.proc = subprocess.Popen(
            # With the images' packages only (image_packages.py): the RSS is what a deployed operator holds.
            [sys.executable, str(Path(__file__).with_name("image_packages.py")), __file__,
             "--run-operator", str(sa_dir), "--writers", str(writers),
             *(["--full-operator"] if full else ["--policy-controller-only"])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO, env=env,
            stderr=open(log, "a") if log else subprocess.DEVNULL)  # noqa: SIM115
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdout.readline()
        self.rss_imported = benchlib.rss_kib(self.proc.pid)
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def check(self) -> None:
        """Raises if the operator process has exited (e.g. it lost its lease under load and ended, as
        designed): a benchmark waiting on it would otherwise wait out its whole timeout."""
        code = self.proc.poll()
        if code is not None:
            raise RuntimeError(f"the operator process exited with code {code} (its log: --operator-log)")

    def cpu(self) -> float:
        self.check()
        return benchlib.cpu_seconds(self.proc.pid)

    def wait_idle(self, quiet: float = 0.05, window: float = 1.0, timeout: float = 600) -> None:
        """Until it spends less than `quiet` CPU seconds in `window` (its informers and queue drained)."""
        deadline = time.monotonic() + timeout
        last = self.cpu()
        while time.monotonic() < deadline:
            time.sleep(window)
            now = self.cpu()
            if now - last < quiet:
                return
            last = now
        raise TimeoutError("the operator did not become idle")

    def stop(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.write("stop\n")
                self.proc.stdin.flush()
            self.proc.wait(30)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def as_cached(kind: Any, obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the operator's caches keep it: without managedFields, through its informer transforms."""
    obj = {**copy.deepcopy(obj), "metadata": {k: v for k, v in obj["metadata"].items() if k != "managedFields"}}
    return CACHE_TRANSFORMS[kind](obj) if kind in CACHE_TRANSFORMS else obj


def json_mib(objs: list[tuple[Any, dict[str, Any]]], managed_fields: bool) -> float:
    """Size of the objects as JSON: as listed, or (managed_fields False) as the operator caches them."""
    total = 0
    for kind, o in objs:
        total += len(json.dumps(o if managed_fields else as_cached(kind, o), separators=(",", ":")))
    return total / 2**20


def python_floor(objs: list[tuple[Any, dict[str, Any]]]) -> dict[str, float]:
    """RSS of a bare interpreter holding the same cached objects as decoded dicts (rss_floor.py)."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as lines:
        for kind, o in objs:
            lines.write(json.dumps(as_cached(kind, o), separators=(",", ":")) + "\n")
        lines.flush()
        done = subprocess.run([sys.executable, str(Path(__file__).with_name("rss_floor.py")), lines.name],
                              capture_output=True, text=True, check=True, timeout=600)
    out: dict[str, float] = json.loads(done.stdout)
    return out


def wait_started(client: Client, names: set[str], check: Callable[[], None], timeout: float = 1800) -> None:
    """Until the whole operator's start-up work has a result on every worker: its drain controller has
    given each Node its drain-state annotation and each NodeState its current and desired drain states.
    At 5,000 nodes that pass takes minutes on a loaded machine, and an idle check alone (a second with
    little CPU) could end it early; the first round would then race it for the same NodeStates."""
    def annotated(obj: dict[str, Any], keys: tuple[str, ...]) -> bool:
        notes = obj["metadata"].get("annotations") or {}
        return all(k in notes for k in keys)

    deadline = time.monotonic() + timeout
    while True:
        check()
        nodes = sum(1 for n in client.list(NODE) if n["metadata"]["name"] in names
                    and annotated(n, (consts.NODE_DRAIN_ANNOTATION,)))
        states = sum(1 for s in client.list(SRIOV_NETWORK_NODE_STATE, NS) if s["metadata"]["name"] in names
                     and annotated(s, (consts.NODE_STATE_DRAIN_ANNOTATION, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT)))
        if nodes == states == len(names):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"operator start-up: {nodes} Nodes and {states} NodeStates of {len(names)} annotated")
        time.sleep(2.0)


def measure(nodes: int, rounds: int, writers: int, log: Path | None, full: bool) -> dict[str, Any]:
    from sriovop.devcluster import ControlPlane

    cluster = clustergen.Cluster(nodes, policies=0)
    workers = [i for i in range(nodes) if clustergen.WORKER in cluster.labels(i)]
    names = {cluster.node_name(i) for i in workers}
    with ControlPlane() as cp:
        client = Client(load_config(str(cp.kubeconfig)))
        seed.base(client, cp.kubeconfig, NS)
        config = client.create(SRIOV_OPERATOR_CONFIG, {"metadata": {"name": "default", "namespace": NS},
                                                      "spec": {"configDaemonNodeSelector": {clustergen.WORKER: ""}}})
        owner = {"apiVersion": config["apiVersion"], "kind": config["kind"], "name": "default",
                 "uid": config["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        started = time.monotonic()
        seed.nodes(client, cluster, with_states=False)

        def state(i: int) -> None:
            obj = cluster.node_state(i)
            obj["metadata"]["ownerReferences"] = [owner]
            seed.write_state(client, obj)

        seed.parallel("node states", state, workers)
        setup_s = time.monotonic() - started
        sa_dir = service_account_dir(client, cp.ca_file, cp.dir / "serviceaccount")
        watcher = SpecWatcher(client, names)
        watcher.start()
        node_objs = {n["metadata"]["name"]: n for n in client.list(NODE)}
        op = OperatorProcess(sa_dir, cp.apiserver_port, writers, log, full)
        rss_imported = op.rss_imported
        try:
            if full:
                wait_started(client, names, op.check)
            op.wait_idle()  # initial sync done: NodeStates owned, nodes labelled, nothing to do
            rss_cached = benchlib.rss_kib(op.proc.pid)
            cpu: dict[str, list[float]] = {"operator": [], "floor_writers": []}
            round_no = [0]

            def floor_round() -> float:
                round_no[0] += 1
                num_vfs = 2 * round_no[0] + 1
                pol = sort_policies([policy(num_vfs)])
                nonlocal op
                op.stop()
                # listed once the operator has exited: `sriovop operator` may still write NodeStates
                # while it shuts down (its drain controller, the cleanup of a leader), which would turn
                # the floor's writes into conflicts
                states = [s for s in client.list(SRIOV_NETWORK_NODE_STATE, NS) if s["metadata"]["name"] in names]
                try:
                    def write(st: dict[str, Any]) -> None:
                        node = node_objs[st["metadata"]["name"]]
                        body = {k: v for k, v in st.items() if k != "status"}
                        body["metadata"] = {k: v for k, v in st["metadata"].items() if k != "managedFields"}
                        body["spec"] = {**(st.get("spec") or {}), "interfaces": desired_interfaces(
                            pol, node, st["status"]["interfaces"])}
                        client.update(SRIOV_NETWORK_NODE_STATE, body)

                    c0 = benchlib.cpu_seconds()
                    t0 = time.perf_counter()
                    with ThreadPoolExecutor(writers) as pool:
                        list(pool.map(write, states))
                    took = watcher.wait_round(num_vfs, timeout=1800) - t0
                    cpu["floor_writers"].append(benchlib.cpu_seconds() - c0)
                finally:
                    op = OperatorProcess(sa_dir, cp.apiserver_port, writers, log, full)
                # the operator restores the policy's numVfs on every NodeState; wait until it is idle again
                if round_no[0] > 1:
                    watcher.wait_round(2 * round_no[0], timeout=1800, check=op.check)
                op.wait_idle()
                return took

            def operator_round() -> float:
                num_vfs = 2 * round_no[0] + 2
                c0 = op.cpu()
                t0 = time.perf_counter()
                if round_no[0] == 1:
                    client.create(SRIOV_NETWORK_NODE_POLICY, policy(num_vfs), NS)
                else:
                    client.patch(SRIOV_NETWORK_NODE_POLICY, "all-workers", {"spec": {"numVfs": num_vfs}}, NS)
                took = watcher.wait_round(num_vfs, timeout=1800, check=op.check) - t0
                cpu["operator"].append(op.cpu() - c0)
                op.wait_idle()
                return took

            samples = benchlib.interleave({"floor": floor_round, "operator": operator_round}, rounds)
            # idle for longer than the pause after which the operator gives freed heap back (trim.QUIET)
            op.wait_idle(quiet=0.25, window=5.0)
            rss_converged = benchlib.rss_kib(op.proc.pid)
        finally:
            watcher.stop.set()
            op.stop()
        cached = [(kind, o) for kind in (NODE, SRIOV_NETWORK_NODE_STATE, SRIOV_NETWORK_NODE_POLICY)
                  for o in client.list(kind, NS if kind.namespaced else None)]
        client.close()
    floor, operator = Stat.of(samples["floor"]), Stat.of(samples["operator"])
    return {
        "nodes": nodes, "workers": len(workers), "rounds": rounds, "writers": writers,
        "operator": "sriovop operator (every controller, leader election)" if full else "policy controller alone",
        "setup_seconds": round(setup_s, 1),
        "floor_seconds": floor.scaled(1, 3), "operator_seconds": operator.scaled(1, 3),
        "ratio_operator_over_floor": round(operator.median / floor.median, 3),
        "cpu_seconds_per_round": {k: Stat.of(v[-rounds:]).scaled(1, 3) for k, v in cpu.items() if v},
        "operator_rss_mib": {"after_imports": round(rss_imported / 1024, 1),
                             "with_cluster_cached": round(rss_cached / 1024, 1),
                             "after_convergence": round(rss_converged / 1024, 1)},
        "cached_json_mib": round(json_mib(cached, managed_fields=False), 1),
        "cached_json_with_managed_fields_mib": round(json_mib(cached, managed_fields=True), 1),
        "cached_objects": len(cached),
        "python_floor": python_floor(cached),
    }


def main() -> None:
    parser = benchlib.arg_parser(__doc__)
    parser.add_argument("--nodes", default="500,5000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--run-operator", metavar="SERVICE_ACCOUNT_DIR")
    parser.add_argument("--operator-log", type=Path, help="write the operator process log here")
    parser.add_argument("--full-operator", action="store_true", default=True,
                        help="run `sriovop operator` as deployed (every controller, leader election; the default)")
    parser.add_argument("--policy-controller-only", dest="full_operator", action="store_false",
                        help="run the policy controller alone in the operator process")
    args = parser.parse_args()
    if args.run_operator:
        run_operator(args.run_operator, args.writers, args.full_operator)
        return
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    started = benchlib.machine()
    sizes = [50] if args.quick else [int(n) for n in args.nodes.split(",")]
    rounds = 3 if args.quick else args.rounds  # quick: a smoke run (make test), not a figure to quote
    results = []
    for n in sizes:
        print(f"operator: {n} nodes", file=sys.stderr, flush=True)
        results.append(measure(n, rounds, args.writers, args.operator_log, args.full_operator))
    figures = []
    for r in results:
        n = r["nodes"]
        figures.append(Figure(
            f"operator_policy_to_nodestates_ratio_{n}_nodes", r["ratio_operator_over_floor"], "x",
            baseline=r["floor_seconds"]["median"],
            baseline_what=f"seconds for the same {r['workers']} NodeState writes by a plain client, "
                          f"{r['writers']} threads, operator stopped (median of {r['rounds']}, interleaved)",
            target=1.3, target_what="operator / floor <= 1.3",
            note=f"operator median {r['operator_seconds']['median']} s"))
        rss, floor = r["operator_rss_mib"]["after_convergence"], r["python_floor"]
        figures.append(Figure(
            f"operator_rss_mb_{n}_nodes", rss, "MiB", baseline=r["cached_json_mib"],
            baseline_what="JSON size of the cached Nodes, NodeStates and policies (without managedFields, "
                          "through the operator's cache transforms)",
            target=80 if n >= 5000 else None, target_what="<= 80 MiB at 5,000 nodes",
            note=f"with managedFields the JSON is {r['cached_json_with_managed_fields_mib']} MiB; "
                 f"RSS after imports {r['operator_rss_mib']['after_imports']} MiB; a bare interpreter "
                 f"holding the same objects as dicts: {floor['rss_holding_mib']} MiB, of which "
                 f"{round(floor['rss_holding_mib'] - floor['rss_before_mib'], 1)} MiB the objects"))
        figures.append(Figure(
            f"operator_rss_python_floor_mb_{n}_nodes", floor["rss_holding_mib"], "MiB",
            baseline=r["cached_json_mib"], baseline_what="JSON size of the same cached objects",
            note="a bare interpreter (imports json only) holding exactly the objects the operator caches, "
                 "each decoded on its own: what CPython itself needs to keep them as dicts"))
    if len(results) > 1:
        a, b = results[0], results[-1]
        growth = (b["operator_rss_mib"]["after_convergence"] - a["operator_rss_mib"]["after_convergence"])
        json_growth = b["cached_json_mib"] - a["cached_json_mib"]
        figures.append(Figure(
            f"operator_rss_growth_mb_{a['nodes']}_to_{b['nodes']}_nodes", round(growth, 1), "MiB",
            baseline=round(json_growth, 1), baseline_what="growth of the cached JSON over the same sizes",
            target=round(2 * json_growth, 1), target_what="<= 2x the cached JSON's growth (linear)",
            note="a bare interpreter holding the same objects grows by "
                 f"{round(b['python_floor']['rss_holding_mib'] - a['python_floor']['rss_holding_mib'], 1)} MiB"))
    benchlib.emit("operator_convergence", figures, {"sizes": results}, args.out, started)


if __name__ == "__main__":
    main()
