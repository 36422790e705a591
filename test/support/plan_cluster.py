"""A small cluster for `sriovop plan`/`explain` tests: the operator's node-policy and drain controllers
and three config daemons on simulated SR-IOV hosts (sriovop.sim), in one namespace.

n-a and n-b: an XXV710 (ens1f0, ens1f1) and an 82576 (ens2f0), IOMMU kernel arguments set; n-c: an E810
(ens1f0, ens1f1) and an 82576, no IOMMU arguments (vfio-pci needs a reboot there).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import (
    SRIOV_NETWORK_NODE_POLICY,
    SRIOV_NETWORK_NODE_STATE,
    SRIOV_NETWORK_POOL_CONFIG,
    SRIOV_OPERATOR_CONFIG,
)
from sriovop.api.v1.supportednics import supported_nic_ids_configmap
from sriovop.controllers.node_policy_desired import normalized
from sriovop.daemon.generation import AppliedGeneration
from sriovop.host.decision import HOST_FACTS_ANNOTATION
from sriovop.host.paths import HostPaths
from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError, Conflict, NotFound
from sriovop.runtime.kinds import CONFIG_MAP, NODE
from sriovop.sim.host import SimHost
from sriovop.sim.ovs import SimOvsdb
from test.support.controllers_harness import node_policy_controller, policy_status_controller
from test.support.daemon_harness import client_for, running_daemon
from test.support.kube import create_namespace, delete_namespace
from test.support.operator_drain import running_drain_manager
from test.support.poll import wait_for

IOMMU = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet intel_iommu=on iommu=pt"
PLAIN = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet"
WORKER = {"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux"}
HOSTS = {"n-a": (["xxv710", "82576:1"], IOMMU, {"rack": "r1", "pool": "ab"}),
         "n-b": (["xxv710", "82576:1"], IOMMU, {"rack": "r2", "pool": "ab"}),
         "n-c": (["e810", "82576:1"], PLAIN, {"rack": "r3"})}
#: Labels only this module's nodes carry: the control plane is shared with other tests' nodes.
SUFFIX = uuid.uuid4().hex[:4]
ALL = {"plan-test": SUFFIX}


def pol(name: str, *, pf: list[str] | None = None, vfs: int = 4, prio: int | None = None, res: str | None = None,
        mtu: int | None = None, dt: str | None = None, sel: dict[str, str] | None = None, **nic_and_spec: Any
        ) -> dict[str, Any]:
    nic = {k: nic_and_spec.pop(k) for k in ("vendor", "deviceID", "rootDevices") if k in nic_and_spec}
    if pf is not None:
        nic["pfNames"] = pf
    spec: dict[str, Any] = {"resourceName": res or name.replace("-", ""), "numVfs": vfs, "nicSelector": nic,
                            "nodeSelector": sel or ALL, **nic_and_spec}
    for key, value in (("priority", prio), ("mtu", mtu), ("deviceType", dt)):
        if value is not None:
            spec[key] = value
    return {"apiVersion": SRIOV_NETWORK_NODE_POLICY.api_version, "kind": SRIOV_NETWORK_NODE_POLICY.kind,
            "metadata": {"name": name}, "spec": spec}


class DrainLog:
    """Every `desired-state` value each NodeState held, from a watch (etcd revision order)."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client, self.namespace = client, namespace
        self.seen: dict[str, list[str]] = {}
        self.draining: set[str] = set()
        self.max_draining: dict[frozenset[str], int] = {}
        self.groups: list[frozenset[str]] = []
        self._lock = threading.Lock()
        self._stream: Any = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="plan-drain-log")
        self.errors: list[str] = []

    def start(self) -> DrainLog:
        self._thread.start()
        assert self._ready.wait(30), "the NodeState watch did not start"
        return self

    def reset(self, groups: list[frozenset[str]]) -> None:
        with self._lock:
            self.seen = {}
            self.groups = groups
            self.max_draining = {g: len(self.draining & g) for g in groups}

    def _run(self) -> None:
        try:
            page = self.client.list_page(SRIOV_NETWORK_NODE_STATE, self.namespace)
            self._stream = self.client.watch(SRIOV_NETWORK_NODE_STATE, self.namespace,
                                             resource_version=page.resource_version, timeout_seconds=1800)
            self._ready.set()
            for etype, obj in self._stream:
                if etype == "BOOKMARK":
                    continue
                ann = obj["metadata"].get("annotations") or {}
                name = obj["metadata"]["name"]
                with self._lock:
                    desired = ann.get(consts.NODE_STATE_DRAIN_ANNOTATION)
                    if desired and desired != consts.DRAIN_IDLE:
                        self.seen.setdefault(name, []).append(desired)
                    if ann.get(consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) in (consts.DRAINING, consts.DRAIN_COMPLETE):
                        self.draining.add(name)
                    else:
                        self.draining.discard(name)
                    for group in self.groups:
                        self.max_draining[group] = max(self.max_draining.get(group, 0), len(self.draining & group))
        except ApiError as exc:
            self.errors.append(str(exc))
        finally:
            self._ready.set()

    def stop(self) -> None:
        if self._stream is not None:
            self._stream.close()

    def level(self, node: str) -> str:
        with self._lock:
            values = set(self.seen.get(node, []))
        return "reboot" if consts.REBOOT_REQUIRED in values else "drain" if consts.DRAIN_REQUIRED in values else "none"


@dataclass
class Cluster:
    client: Client
    namespace: str
    sims: dict[str, SimHost]
    log: DrainLog


@contextmanager
def plan_cluster(kubeconfig: Path, tmp: Path, *, hosts: Mapping[str, tuple[list[str], str, dict[str, str]]] = HOSTS,
                 feature_gates: Mapping[str, bool] | None = None, ovs: bool = False,
                 group: Mapping[str, str] = ALL, **daemon_settings: Any) -> Iterator[Cluster]:
    """The operator's node-policy, drain and policy-status controllers and one config daemon per
    simulated host (with `ovs`, each host gets an OVSDB, sriovop.sim.ovs; `daemon_settings`
    override the daemons' DaemonSettings). `group`: the labels of these nodes only, the operator's
    configDaemonNodeSelector (two clusters of this kind share a control plane with distinct groups)."""
    namespace = f"plan-{uuid.uuid4().hex[:6]}"
    create_namespace(kubeconfig, namespace)
    client = client_for(kubeconfig)
    names = {n: f"{n}-{SUFFIX}" for n in hosts}
    with ExitStack() as stack:
        client.create(CONFIG_MAP, supported_nic_ids_configmap(namespace), namespace)
        client.create(SRIOV_OPERATOR_CONFIG, {"metadata": {"name": "default", "namespace": namespace},
                                              "spec": {"configDaemonNodeSelector": dict(group),
                                                       "featureGates": dict(feature_gates or {})}}, namespace)
        sims: dict[str, SimHost] = {}
        for short, (nics, cmdline, labels) in hosts.items():
            node = names[short]
            client.create(NODE, {"metadata": {"name": node, "labels": {
                **WORKER, **labels, **group, "kubernetes.io/hostname": node}}})
            stack.callback(_delete_node, client, node)
            sims[node] = stack.enter_context(SimHost(tmp / short / "host", nics, cmdline=cmdline))
            if ovs:
                db = SimOvsdb(sims[node].root)
                stack.callback(db.stop)
                db.start()
        stack.enter_context(node_policy_controller(kubeconfig, namespace, stale_delay_minutes=0))
        stack.enter_context(running_drain_manager(kubeconfig, namespace))
        stack.enter_context(policy_status_controller(kubeconfig, namespace))
        for node, sim in sims.items():
            stack.enter_context(running_daemon(kubeconfig, namespace, node, sim.root, **daemon_settings))
        for node in sims:  # the daemon has reported the host and published its facts
            wait_for(lambda n=node: _ready(client, namespace, n), 90, f"NodeState {node} reported")
        log = DrainLog(client, namespace).start()
        stack.callback(log.stop)
        yield Cluster(client, namespace, sims, log)
    delete_namespace(kubeconfig, namespace)


def _delete_node(client: Client, name: str) -> None:
    try:
        client.delete(NODE, name)
    except NotFound:
        pass


def _ready(client: Client, namespace: str, node: str) -> bool:
    state = client.get(SRIOV_NETWORK_NODE_STATE, node, namespace)
    ann = state["metadata"].get("annotations") or {}
    return bool((state.get("status") or {}).get("interfaces")) and HOST_FACTS_ANNOTATION in ann


def short(node: str) -> str:
    return node.rsplit("-", 1)[0]


def set_pools(c: Cluster, pools: dict[str, dict[str, Any] | None]) -> None:
    for name, spec in pools.items():
        try:
            c.client.delete(SRIOV_NETWORK_POOL_CONFIG, name, c.namespace)
        except NotFound:
            pass
        if spec is not None:
            c.client.create(SRIOV_NETWORK_POOL_CONFIG, {"metadata": {"name": name, "namespace": c.namespace},
                                                        "spec": spec}, c.namespace)


def converged(c: Cluster, node: str, plan_node: dict[str, Any]) -> bool:
    state = c.client.get(SRIOV_NETWORK_NODE_STATE, node, c.namespace)
    if normalized((state.get("spec") or {}).get("interfaces") or []) != normalized(plan_node["spec"]["interfaces"]):
        return False
    ann = state["metadata"].get("annotations") or {}
    if ann.get(consts.NODE_STATE_DRAIN_ANNOTATION) != consts.DRAIN_IDLE or \
            ann.get(consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) != consts.DRAIN_IDLE:
        return False
    applied = AppliedGeneration(HostPaths.at(c.sims[node].root).state_dir)
    return (applied.is_applied(state["metadata"]["uid"], state["metadata"]["generation"])
            and (state.get("status") or {}).get("syncStatus") == consts.SYNC_STATUS_SUCCEEDED)


def reboot_if_asked(c: Cluster, node: str, plan_node: dict[str, Any]) -> bool:
    state = c.client.get(SRIOV_NETWORK_NODE_STATE, node, c.namespace)
    ann = state["metadata"].get("annotations") or {}
    if ann.get(consts.NODE_STATE_DRAIN_ANNOTATION) == consts.REBOOT_REQUIRED and \
            "reboot required" in ((state.get("status") or {}).get("lastSyncError") or ""):
        c.sims[node].reboot(add_kernel_args=plan_node["missingKernelArgs"])
        return True
    return False


def create_or_replace(c: Cluster, body: dict[str, Any]) -> None:
    """`kubectl replace` (or create): the policy status controller writes status at any moment, which
    moves the resourceVersion, so a replace that loses that race reads the policy again and retries."""
    name = body["metadata"]["name"]
    for _ in range(20):
        try:
            old = c.client.get(SRIOV_NETWORK_NODE_POLICY, name, c.namespace)
        except NotFound:
            c.client.create(SRIOV_NETWORK_NODE_POLICY, body, c.namespace)
            return
        body["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        try:
            c.client.update(SRIOV_NETWORK_NODE_POLICY, body)
            return
        except Conflict:
            continue
    raise AssertionError(f"policy {name}: 20 conflicting writes in a row")
