"""The drain flow of the in-cluster proof: a policy change on the worker's simulated host drains real pods.

Workload: a Deployment of 2 pause pods that prefer sriovop-node-2 and request `openshift.io/intelnics`
(the operator's partial drain evicts only such pods), guarded by a PDB with minAvailable = replicas.
Steps: the policy creates 8 VFs (0 -> N: no drain), then changes numVfs to 4 (a configured PF with VFs
changes: the daemon requests a drain); the blocked drain is recorded, the PDB is relaxed, and the flow
ends when the NodeState is Succeeded with 4 VFs, its drain state Idle and the node schedulable.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY
from sriovop.controllers.drain.states import DRAIN_BLOCKED_BY_ANNOTATION, REASON_DRAIN_BLOCKED
from sriovop.devcluster.images.pause import PAUSE_IMAGE
from sriovop.runtime.errors import Conflict
from sriovop.runtime.kinds import DEPLOYMENT, EVENT, NAMESPACE, NODE, POD_DISRUPTION_BUDGET, SERVICE_ACCOUNT
from test.support.incluster import NAMESPACE as OPERATOR_NAMESPACE
from test.support.incluster import RESOURCE, WORKER_NODE, Installed
from test.support.poll import wait_for

REPLICAS = 2
POLICY = "incluster-drain"
#: The daemon and the operator react in seconds when idle; the machine may be at a load of 20.
FLOW_TIMEOUT_S = 420.0


@dataclass
class DrainRecord:
    namespace: str
    pods_before: dict[str, str]  # pod name -> node
    pdb_status: dict[str, Any]
    blocked_annotation: str = ""
    blocked_events: list[str] = field(default_factory=list)
    unschedulable_while_blocked: bool = False
    pods_while_blocked: dict[str, str] = field(default_factory=dict)
    pods_after: dict[str, str] = field(default_factory=dict)
    node_after: dict[str, Any] = field(default_factory=dict)
    state_after: dict[str, Any] = field(default_factory=dict)


def _deployment(namespace: str) -> dict[str, Any]:
    prefer_worker = {"weight": 100, "preference": {"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": [WORKER_NODE]}]}}
    return {
        "metadata": {"name": "app", "namespace": namespace},
        "spec": {
            "replicas": REPLICAS, "selector": {"matchLabels": {"app": "app"}},
            "template": {"metadata": {"labels": {"app": "app"}}, "spec": {
                "terminationGracePeriodSeconds": 0,
                "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [prefer_worker]}},
                "containers": [{"name": "main", "image": PAUSE_IMAGE, "imagePullPolicy": "IfNotPresent",
                                "resources": {"requests": {RESOURCE: "1"}, "limits": {RESOURCE: "1"}}}],
            }},
        },
    }


def _policy(num_vfs: int) -> dict[str, Any]:
    return {"metadata": {"name": POLICY, "namespace": OPERATOR_NAMESPACE},
            "spec": {"resourceName": RESOURCE.split("/")[1], "nodeSelector": {"kubernetes.io/hostname": WORKER_NODE},
                     "numVfs": num_vfs, "nicSelector": {"vendor": "8086"}, "deviceType": "netdevice"}}


def running_pods(env: Installed, namespace: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in env.pods(namespace, {"app": "app"})
            if (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")}


def _pods_if(env: Installed, namespace: str, wanted: Callable[[dict[str, str]], bool]) -> dict[str, str] | None:
    pods = running_pods(env, namespace)
    return pods if wanted(pods) else None


def _uncordoned(env: Installed) -> dict[str, Any] | None:
    node = dict(env.kube.get(NODE, WORKER_NODE))
    return None if node["spec"].get("unschedulable") else node


def _synced(env: Installed, num_vfs: int) -> dict[str, Any] | None:
    state = env.node_state()
    status = state.get("status") or {}
    vfs = [i.get("numVfs") for i in status.get("interfaces") or [] if i.get("vendor") == "8086"]
    annotations = state["metadata"].get("annotations") or {}
    done = (status.get("syncStatus") == "Succeeded" and vfs == [num_vfs]
            and annotations.get(consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_IDLE)
    return state if done else None


def _pdb_observed(env: Installed, namespace: str) -> dict[str, Any] | None:
    pdb = env.kube.get(POD_DISRUPTION_BUDGET, "app", namespace)
    status = pdb.get("status") or {}
    fresh = status.get("observedGeneration") == pdb["metadata"]["generation"]
    return dict(status) if fresh and status.get("currentHealthy") == REPLICAS else None


def _blocked(env: Installed) -> str | None:
    annotations = env.node_state()["metadata"].get("annotations") or {}
    return annotations.get(DRAIN_BLOCKED_BY_ANNOTATION)


def _blocked_events(env: Installed) -> list[str]:
    return [str(e.get("message")) for e in env.kube.list(EVENT, OPERATOR_NAMESPACE)
            if e.get("reason") == REASON_DRAIN_BLOCKED and (e.get("involvedObject") or {}).get("name") == WORKER_NODE]


def _create_policy(env: Installed) -> bool:
    try:
        env.kube.create(SRIOV_NETWORK_NODE_POLICY, _policy(8))
    except Conflict as exc:  # an earlier attempt was stored, its answer lost
        if not exc.already_exists:
            raise
    return True


def run_drain_flow(env: Installed) -> DrainRecord:
    kube = env.kube
    namespace = f"drain-{uuid.uuid4().hex[:6]}"
    kube.create(NAMESPACE, {"metadata": {"name": namespace}})
    wait_for(lambda: kube.get(SERVICE_ACCOUNT, "default", namespace), timeout=120, what=f"{namespace}/default SA")
    kube.create(DEPLOYMENT, _deployment(namespace))
    kube.create(POD_DISRUPTION_BUDGET, {"metadata": {"name": "app", "namespace": namespace}, "spec": {
        "minAvailable": REPLICAS, "selector": {"matchLabels": {"app": "app"}}}})
    before = wait_for(lambda: _pods_if(env, namespace, lambda pods: len(pods) == REPLICAS),
                      timeout=FLOW_TIMEOUT_S, what="the Deployment's pods Running", interval=1)
    pdb_status = wait_for(lambda: _pdb_observed(env, namespace), timeout=FLOW_TIMEOUT_S,
                          what="PDB status from the disruption controller", interval=1)
    record = DrainRecord(namespace, before, pdb_status)

    # Policy writes go through the operator webhook, which restarts when the operator re-renders it.
    wait_for(lambda: _create_policy(env), timeout=FLOW_TIMEOUT_S,
             what="the policy admitted", interval=1)
    wait_for(lambda: _synced(env, 8), timeout=FLOW_TIMEOUT_S, what="8 VFs on the simulated PF", interval=1)
    wait_for(lambda: kube.patch(SRIOV_NETWORK_NODE_POLICY, POLICY, {"spec": {"numVfs": 4}}, OPERATOR_NAMESPACE),
             timeout=FLOW_TIMEOUT_S, what="the policy change admitted", interval=1)
    record.blocked_annotation = wait_for(lambda: _blocked(env), timeout=FLOW_TIMEOUT_S,
                                         what=f"{DRAIN_BLOCKED_BY_ANNOTATION} on the NodeState", interval=1)
    record.blocked_events = wait_for(lambda: _blocked_events(env), timeout=120, what="a DrainBlocked Event")
    record.unschedulable_while_blocked = bool(kube.get(NODE, WORKER_NODE)["spec"].get("unschedulable"))
    record.pods_while_blocked = running_pods(env, namespace)

    kube.patch(POD_DISRUPTION_BUDGET, "app", {"spec": {"minAvailable": REPLICAS - 1}}, namespace)
    record.state_after = wait_for(lambda: _synced(env, 4), timeout=FLOW_TIMEOUT_S,
                                  what="4 VFs on the simulated PF and the drain Idle", interval=1)
    record.node_after = wait_for(lambda: _uncordoned(env), timeout=FLOW_TIMEOUT_S,
                                 what=f"{WORKER_NODE} uncordoned", interval=1)
    record.pods_after = wait_for(
        lambda: _pods_if(env, namespace, lambda pods: len(pods) == REPLICAS and not set(pods) & set(before)),
        timeout=FLOW_TIMEOUT_S, what="replacement pods Running", interval=1)
    return record
