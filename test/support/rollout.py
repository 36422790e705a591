"""A rollout across a hollow fleet, as users run one: two pools, one policy change that needs a drain
on every node, an independent watcher, and the faults users meet halfway through.

Host: simulated (sriovop.sim), one per hollow node; no kubelet runs (the drains evict nothing).
Shared by test/bench/rollout.py and test/integration/hollow/.

```
plan = RolloutPlan(nodes=20, canary=4, apply_delay=1.0)
with RolloutScenario(tmp_path, plan) as sc:          # control plane, operator, fleet, first policy applied
    t0 = sc.change(6)                                  # numVfs 4 -> 6 on every node: a drain everywhere
    seconds = sc.watcher.wait_configured(6, timeout=600) - t0
```
"""

from __future__ import annotations

import math
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY, SRIOV_NETWORK_POOL_CONFIG, SRIOV_OPERATOR_CONFIG
from sriovop.api.v1.maxunavailable import max_unavailable
from sriovop.api.v1.supportednics import supported_nic_ids_configmap
from sriovop.devcluster import ControlPlane
from sriovop.devcluster.audit import audit_args
from sriovop.hollow.fleet import POOL_LABEL, WORKER_ROLE
from sriovop.hollow.supervisor import HollowFleet
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import Conflict
from sriovop.runtime.kinds import CONFIG_MAP, LEASE, NAMESPACE, NODE
from test.support.kube import apply_crds
from test.support.operator_process import OperatorProcess
from test.support.rollout_watch import RolloutWatcher

REPO = Path(__file__).resolve().parents[2]
NS = consts.DEFAULT_OPERATOR_NAMESPACE
POLICY = "hollow-rollout"
LEASE_NAME = "a56def2a.openshift.io"
#: numVfs of the first policy (applied before anything is measured); changes go up from there. The
#: 82576 in the fleet has 7 VFs per PF, so every value stays <= 7.
FIRST_VFS = 2
#: With `RolloutPlan.first_wave`, the first policy selects only nodes carrying this label, added a wave
#: at a time.
FIRST_LABEL = "sriovop.io/hollow-first-policy"
#: The bench's own requests, told apart from the operator's and the daemons' in the audit log.
BENCH_USER_AGENT = "rollout-bench"
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
"""


@dataclass(frozen=True)
class RolloutPlan:
    nodes: int
    #: Nodes in the `canary` pool (maxUnavailable 1); the rest are `bulk` (maxUnavailable 10%).
    canary: int = 10
    apply_delay: float = 10.0
    per_process: int = 100
    operators: int = 1
    requeue_after: float = 30.0
    bulk_max_unavailable: str = "10%"
    #: The hollow daemons' API clients: "shared" per worker process (sriovop.hollow.fanout) or "per-daemon".
    clients: str = "shared"
    #: Nodes given the first policy at a time (0: the whole fleet at once). The first apply is set-up,
    #: not measured; with every node of a 1,000-node fleet applying it at once on 2 cores, the load
    #: average stayed over 300 for minutes and the operator lost its lease before the rollout began.
    first_wave: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.canary < self.nodes:
            raise ValueError(f"canary: must be between 1 and nodes - 1, got {self.canary} of {self.nodes}")

    @property
    def pools(self) -> dict[str, int]:
        return {"bulk": self.nodes - self.canary, "canary": self.canary}

    @property
    def limits(self) -> dict[str, int]:
        return {"bulk": max_unavailable(self.bulk_max_unavailable, self.nodes - self.canary), "canary": 1}

    def ideal_seconds(self) -> float:
        """Each pool drains its nodes `limit` at a time and each node's apply takes apply_delay: the
        slowest pool's waves times the apply delay (drain requests, evictions and API round trips
        taken as free)."""
        return max(math.ceil(size / max(1, self.limits[p])) for p, size in self.pools.items()) * self.apply_delay


def policy(num_vfs: int, paced: bool = False) -> dict[str, Any]:
    """One policy for the whole fleet (every hollow NIC is Intel): numVfs on both PFs of every worker
    (`paced`: of every worker labelled FIRST_LABEL)."""
    selector = {WORKER_ROLE: "", FIRST_LABEL: "true"} if paced else {WORKER_ROLE: ""}
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
            "metadata": {"name": POLICY, "namespace": NS},
            "spec": {"resourceName": "hollow_vfs", "priority": 50, "numVfs": num_vfs, "deviceType": "netdevice",
                     "nodeSelector": selector, "nicSelector": {"vendor": "8086"}}}


def pool_config(name: str, max_unavailable_value: int | str) -> dict[str, Any]:
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkPoolConfig",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"maxUnavailable": max_unavailable_value, "nodeSelector": {"matchLabels": {POOL_LABEL: name}}}}


@dataclass
class RolloutScenario:
    directory: Path
    plan: RolloutPlan
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)
    audit: bool = True
    cp: ControlPlane | None = None
    client: Client | None = None
    fleet: HollowFleet | None = None
    watcher: RolloutWatcher | None = None
    operators: list[OperatorProcess] = field(default_factory=list)
    num_vfs: int = FIRST_VFS
    #: Nodes deleted by `delete_draining_node` (the fleet is that much smaller).
    deleted: list[str] = field(default_factory=list)
    #: Operator replicas that exited on their own and were started again.
    operator_restarts: list[str] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _operators_lock: threading.RLock = field(default_factory=threading.RLock)

    # -- lifecycle ---------------------------------------------------------------------------------
    def __enter__(self) -> RolloutScenario:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, first_timeout: float | None = None) -> RolloutScenario:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "logs").mkdir(exist_ok=True)
        cp_dir = self.directory / "cp"
        cp_dir.mkdir(exist_ok=True)
        extra: list[str] = []
        if self.audit:
            (cp_dir / "policy.yaml").write_text(AUDIT_POLICY)
            extra = audit_args(cp_dir, cp_dir / "policy.yaml")
        self.cp = ControlPlane(cp_dir, extra_apiserver_args=extra).start()
        rest = load_config(str(self.cp.kubeconfig))
        rest.user_agent = BENCH_USER_AGENT
        self.client = Client(rest)
        self._bootstrap()
        for i in range(self.plan.operators):
            self.start_operator(i)
        threading.Thread(target=self._restart_exited_operators, name="rollout-operator-restarts", daemon=True).start()
        started = time.monotonic()
        self.fleet = HollowFleet(self.directory / "fleet", self.cp.kubeconfig, self.plan.nodes,
                                 per_process=self.plan.per_process, apply_delay=self.plan.apply_delay,
                                 requeue_after=self.plan.requeue_after, pools=self.plan.pools,
                                 clients=self.plan.clients, say=self.say)
        self.fleet.start()  # assigned first: a start that fails half way is still stopped by stop()
        self.say(f"rollout: fleet of {self.plan.nodes} up in {time.monotonic() - started:.0f}s")
        self.watcher = RolloutWatcher(self.client, NS, self.fleet.prefix).start()
        self.client.create(SRIOV_NETWORK_NODE_POLICY, policy(FIRST_VFS, paced=self.plan.first_wave > 0), NS)
        started = time.monotonic()
        timeout = first_timeout or max(600.0, 3 * self.plan.ideal_seconds() + 6 * self.plan.nodes / 10)
        if self.plan.first_wave > 0:
            self._first_policy_in_waves(timeout)
        self.watcher.wait_configured(FIRST_VFS, timeout, expect=self.plan.nodes)
        self.say(f"rollout: first policy applied everywhere in {time.monotonic() - started:.0f}s")
        return self

    def _first_policy_in_waves(self, timeout: float) -> None:
        """Label `first_wave` nodes at a time for the first policy, each wave once the ones before are
        configured."""
        assert self.fleet is not None and self.client is not None
        names = [n.name for n in self.fleet.nodes]
        for i in range(0, len(names), self.plan.first_wave):
            wave = names[i:i + self.plan.first_wave]
            for name in wave:
                self.client.patch(NODE, name, {"metadata": {"labels": {FIRST_LABEL: "true"}}})
            self.wait_progress(FIRST_VFS, (i + len(wave)) / len(names), timeout)
            self.say(f"rollout: first policy on {i + len(wave)} of {len(names)} nodes")

    def _bootstrap(self) -> None:
        assert self.client is not None and self.cp is not None
        apply_crds(self.cp.kubeconfig, sorted((REPO / "manifests" / "crds").glob("*.yaml")))
        for kind, obj in ((NAMESPACE, {"metadata": {"name": NS}}), (CONFIG_MAP, supported_nic_ids_configmap(NS))):
            try:
                self.client.create(kind, obj)
            except Conflict:
                pass
        self.client.create(SRIOV_OPERATOR_CONFIG, {
            "apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovOperatorConfig",
            "metadata": {"name": consts.DEFAULT_CONFIG_NAME, "namespace": NS},
            "spec": {"enableInjector": False, "enableOperatorWebhook": False, "logLevel": 0,
                     "configDaemonNodeSelector": {WORKER_ROLE: ""}}})
        self.client.create(SRIOV_NETWORK_POOL_CONFIG, pool_config("bulk", self.plan.bulk_max_unavailable), NS)
        self.client.create(SRIOV_NETWORK_POOL_CONFIG, pool_config("canary", 1), NS)

    def start_operator(self, i: int) -> OperatorProcess:
        assert self.cp is not None
        op = OperatorProcess(self.cp.kubeconfig, NS, self.directory / "logs" / f"operator-{i}-{time.time():.0f}.log",
                             args=["--namespace", NS, "--log-level", "warning", "--leader-elect",
                                   "--leader-election-identity", f"rollout-operator-{i}"])
        op.identity = f"rollout-operator-{i}"  # type: ignore[attr-defined]
        if i < len(self.operators):
            self.operators[i] = op
        else:
            self.operators.append(op)
        op.wait_ready(120)
        return op

    def stop(self) -> None:
        self._stopping.set()
        if self.watcher is not None:
            self.watcher.stop()
        if self.fleet is not None:
            try:
                self.fleet.stop()
            except Exception as exc:  # the control plane goes next; report, do not mask the test's error
                self.say(f"rollout: fleet clean-up failed: {exc!r}")
        for op in self.operators:
            op.stop()
        if self.client is not None:
            self.client.close()
        if self.cp is not None:
            self.cp.stop()

    # -- actions -----------------------------------------------------------------------------------
    def change(self, num_vfs: int) -> float:
        """Patch the policy's numVfs; returns the perf_counter time of the write."""
        assert self.client is not None
        t0 = time.perf_counter()
        self.client.patch(SRIOV_NETWORK_NODE_POLICY, POLICY, {"spec": {"numVfs": num_vfs}}, NS)
        self.num_vfs = num_vfs
        return t0

    def leader(self) -> OperatorProcess:
        assert self.client is not None
        holder = (self.client.get(LEASE, LEASE_NAME, NS).get("spec") or {}).get("holderIdentity")
        for op in self.operators:
            if getattr(op, "identity", None) == holder and op.proc.poll() is None:
                return op
        raise LookupError(f"no running operator holds the lease (holder {holder!r})")

    def wait_progress(self, num_vfs: int, fraction: float, timeout: float) -> None:
        """Until `fraction` of the fleet is configured with `num_vfs` (a fault lands mid-rollout)."""
        assert self.watcher is not None
        want = math.ceil(fraction * self.plan.nodes)
        deadline = time.monotonic() + timeout
        while self.watcher.count_configured(num_vfs) < want:
            if time.monotonic() > deadline:
                raise TimeoutError(f"fewer than {want} nodes configured with {num_vfs} VFs within {timeout:.0f}s")
            time.sleep(0.2)

    def kill_daemons(self, fraction: float) -> list[str]:
        """SIGKILL the daemon processes of `fraction` of the fleet (whole slices, at least one) and start
        them again once all are dead; their hosts keep running. Returns the affected node names."""
        assert self.fleet is not None
        want = max(1, math.ceil(fraction * self.plan.nodes))
        chosen, hit = [], 0
        for s in reversed(self.fleet.slices):  # the last slices hold the canary pool: both pools get hit
            if hit >= want:
                break
            chosen.append(s)
            hit += s.count
        for s in chosen:
            self.fleet.kill_daemons(s.index)
        for s in chosen:
            self.fleet.start_daemons(s.index, wait=False)
        return [n.name for s in chosen for n in self.fleet.nodes[s.first:s.first + s.count]]

    def delete_draining_node(self, timeout: float) -> str:
        """Delete the Node of a bulk-pool node that holds a drain slot (waiting for one to)."""
        assert self.watcher is not None and self.client is not None
        deadline = time.monotonic() + timeout
        while not (holders := self.watcher.in_flight("bulk")):
            if time.monotonic() > deadline:
                raise TimeoutError("no bulk node started draining")
            time.sleep(0.05)
        self.client.delete(NODE, holders[0])
        return holders[0]

    def kill_leader(self) -> int:
        """SIGKILL the operator holding the lease, and start a replacement replica (as its Deployment
        would); returns the killed replica's index."""
        with self._operators_lock:
            op = self.leader()
            i = self.operators.index(op)
            op.proc.send_signal(signal.SIGKILL)
            op.proc.wait(30)
            op.stop()
            self.start_operator(i)
        return i

    def _restart_exited_operators(self) -> None:
        """An operator replica that exits on its own (it lost its lease on a machine too loaded to renew
        it in time, and stops as upstream's does) is started again, as its Deployment's kubelet would
        restart the container; each restart is recorded in `operator_restarts`."""
        while not self._stopping.wait(1.0):
            with self._operators_lock:
                for i, op in enumerate(list(self.operators)):
                    if op.proc.poll() is not None and not self._stopping.is_set():
                        self.operator_restarts.append(f"replica {i} exited with {op.proc.returncode}")
                        self.say(f"rollout: operator replica {i} exited ({op.proc.returncode}); restarting it")
                        op.stop()
                        try:
                            self.start_operator(i)
                        except AssertionError as exc:
                            self.say(f"rollout: operator replica {i} did not come back: {exc}")
