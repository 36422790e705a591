"""Status on SriovNetworkNodePolicies and SriovNetworkPoolConfigs: which nodes each one reaches, which
are ready, and Ready/Progressing/Degraded conditions whose reasons name the nodes that fail or drain.

Upstream designed per-policy conditions but ships empty status structs; these fields are additive, so
clients that do not know them ignore them. The node's state comes from its NodeState (syncStatus,
lastSyncError, the drain annotations); which nodes a policy reaches uses the same selector helpers as
the operator's merge (a node the policy selects, with a reported PF its nicSelector matches).

Wiring (the namespaced manager; leader-gated like every controller):

    PolicyStatusReconciler(mgr.client, namespace).setup(mgr)

Every policy, pool, NodeState and Node event maps to one key, delayed by `debounce` seconds so that a
rollout's stream of NodeState updates costs one pass per interval, not one per update; one pass
recomputes every status from the cache and writes (server-side apply on the status subresource) only
those that changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import (
    SRIOV_NETWORK_NODE_POLICY,
    SRIOV_NETWORK_NODE_STATE,
    SRIOV_NETWORK_POOL_CONFIG,
    SRIOV_OPERATOR_CONFIG,
)
from sriovop.api.v1.nicselector import nic_selector_matches
from sriovop.api.v1.selectors import node_labels, policy_selects_node
from sriovop.controllers.drain.states import occupies_slot
from sriovop.controllers.node_policy_desired import daemon_nodes, normalized, status_interfaces
from sriovop.controllers.pool_config import is_hw_offload_pool, selector_matches
from sriovop.controllers.ready_condition import now_rfc3339
from sriovop.runtime.controller import Controller, Request, Result
from sriovop.runtime.errors import Conflict, NotFound
from sriovop.runtime.kinds import NODE, Kind

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "policy-status"
SYNC_KEY_NAME = "policy-status"
RESYNC_PERIOD = 300.0
DEFAULT_DEBOUNCE = 1.0
CONDITION_PROGRESSING = "Progressing"
CONDITION_DEGRADED = "Degraded"
#: Nodes named in a condition message; the rest are counted.
MAX_NAMED = 10
#: A node's phase (`node_phase`), as the conditions and `sriovop status` count it.
READY, APPLYING, WAITING, DRAINING, FAILED, UNKNOWN = "ready", "applying", "waiting", "draining", "failed", "unknown"

Obj = Mapping[str, Any]


def name_list(names: Sequence[str], sep: str = ", ") -> str:
    """The first MAX_NAMED names and a count of the rest: a message that names every node of a large
    fleet would outgrow the object it is written on and nobody would read it."""
    shown = sep.join(names[:MAX_NAMED])
    more = len(names) - MAX_NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def _annotation(obj: Obj, key: str) -> str:
    return str(((obj.get("metadata") or {}).get("annotations") or {}).get(key) or "")


def node_phase(state: Obj | None) -> str:
    """ready | failed | draining | waiting (for a drain slot) | applying | unknown, from its NodeState."""
    if state is None:
        return UNKNOWN
    sync = (state.get("status") or {}).get("syncStatus") or ""
    desired = _annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION) or consts.DRAIN_IDLE
    current = _annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) or consts.DRAIN_IDLE
    if sync == consts.SYNC_STATUS_FAILED:
        return FAILED
    if current != consts.DRAIN_IDLE:
        return DRAINING
    if desired != consts.DRAIN_IDLE:
        return WAITING
    if sync == consts.SYNC_STATUS_SUCCEEDED:
        return READY
    return APPLYING if sync == consts.SYNC_STATUS_IN_PROGRESS else UNKNOWN


def conditions_for(nodes: Sequence[str], states: Mapping[str, Obj], what: str) -> list[dict[str, str]]:
    """Ready, Progressing and Degraded over `nodes` (already sorted); `what` names the object's nodes
    in messages ("selected nodes", "pool nodes")."""
    phases = {n: node_phase(states.get(n)) for n in nodes}
    failed = [n for n in nodes if phases[n] == FAILED]
    draining = [n for n in nodes if phases[n] == DRAINING]
    waiting = [n for n in nodes if phases[n] == WAITING]
    applying = [n for n in nodes if phases[n] in (APPLYING, UNKNOWN)]
    ready = [n for n in nodes if phases[n] == READY]
    if not nodes:
        ready_c = ("False", "NoMatchingNodes", f"no {what}")
    elif len(ready) == len(nodes):
        ready_c = ("True", "AllNodesReady", f"{len(nodes)} {what} configured")
    else:
        ready_c = ("False", "NodesNotReady", f"{len(ready)} of {len(nodes)} {what} ready; not ready: "
                   + name_list([n for n in nodes if phases[n] != READY]))
    if draining or waiting:
        parts = [f"{label}: {name_list(names)}" for label, names in (
            ("draining", draining), ("waiting for a drain slot", waiting), ("applying", applying)) if names]
        progressing = ("True", "Draining", "; ".join(parts))
    elif applying:
        progressing = ("True", "Applying", "applying: " + name_list(applying))
    else:
        progressing = ("False", "Idle", f"no change under way on the {what}")
    if failed:
        errors = [f"{n}: {(states[n].get('status') or {}).get('lastSyncError') or 'failed'}" for n in failed[:3]]
        degraded = ("True", "NodesFailed", f"failed: {name_list(failed)} ({'; '.join(errors)})")
    else:
        degraded = ("False", "NoFailures", f"no {what} failed")
    return [{"type": t, "status": s, "reason": r, "message": m[:32768]}
            for t, (s, r, m) in ((consts.CONDITION_READY, ready_c), (CONDITION_PROGRESSING, progressing),
                                 (CONDITION_DEGRADED, degraded))]


def policy_nodes(policy: Obj, nodes: Iterable[Obj], states: Mapping[str, Obj]) -> list[str]:
    """Nodes the policy reaches: it selects the node and its nicSelector matches a reported PF."""
    selector = (policy.get("spec") or {}).get("nicSelector") or {}
    out = []
    for node in nodes:
        name = node["metadata"]["name"]
        if policy_selects_node(policy, node) and any(
                nic_selector_matches(selector, i) for i in status_interfaces(states.get(name))):
            out.append(name)
    return sorted(out)


def policy_status(policy: Obj, nodes: Iterable[Obj], states: Mapping[str, Obj]) -> dict[str, Any]:
    matched = policy_nodes(policy, nodes, states)
    return {"matchedNodes": len(matched),
            "readyNodes": sum(1 for n in matched if node_phase(states.get(n)) == READY),
            "conditions": conditions_for(matched, states, "selected nodes")}


def pool_nodes(pool: Obj, nodes: Iterable[Obj]) -> list[str]:
    selector = (pool.get("spec") or {}).get("nodeSelector")
    try:
        return sorted(n["metadata"]["name"] for n in nodes if selector_matches(selector, node_labels(n)))
    except ValueError:
        return []


def pool_status(pool: Obj, nodes: Iterable[Obj], states: Mapping[str, Obj]) -> dict[str, Any]:
    members = pool_nodes(pool, nodes)
    draining = [n for n in members if occupies_slot(
        _annotation(states.get(n) or {}, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT))]
    with_state = [n for n in members if n in states]
    return {"nodeCount": len(members), "drainingNodes": draining,
            "conditions": conditions_for(with_state, states, "pool nodes")}


def merged_conditions(old: Sequence[Obj], new: Sequence[dict[str, str]], generation: int | None
                      ) -> list[dict[str, Any]]:
    """metav1.Condition semantics: lastTransitionTime moves only when a condition's status flips."""
    by_type = {c.get("type"): c for c in old}
    out = []
    for cond in new:
        prev = by_type.get(cond["type"])
        merged: dict[str, Any] = dict(cond)
        keep = prev is not None and prev.get("status") == cond["status"] and prev.get("lastTransitionTime")
        merged["lastTransitionTime"] = prev["lastTransitionTime"] if keep and prev else now_rfc3339()
        if generation is not None:
            merged["observedGeneration"] = generation
        out.append(merged)
    return out


def _same(old: Obj, new: Mapping[str, Any]) -> bool:
    """Equal as stored (absent == empty == 0), ignoring lastTransitionTime: a status write triggers an
    event, so writing an equal status would loop."""
    def strip(status: Obj) -> Any:
        conds = [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status.get("conditions") or []]
        return normalized({**{k: v for k, v in status.items() if k != "conditions"}, "conditions": conds})
    return bool(strip(old) == strip(new))


class PolicyStatusReconciler:
    def __init__(self, client: Any, namespace: str, debounce: float = DEFAULT_DEBOUNCE) -> None:
        """`client` reads (cached in the operator) and writes status."""
        self.client = client
        self.namespace = namespace
        self.debounce = debounce
        self.key = Request(namespace, SYNC_KEY_NAME)
        self.controller: Controller | None = None
        self.writes = 0

    def setup(self, manager: Any) -> Controller:
        ctrl = Controller(CONTROLLER_NAME, self.reconcile, workers=1, registry=manager.registry)
        self.controller = ctrl
        for kind in (SRIOV_NETWORK_NODE_POLICY, SRIOV_NETWORK_POOL_CONFIG, SRIOV_NETWORK_NODE_STATE, NODE,
                     SRIOV_OPERATOR_CONFIG):
            ctrl.watches(manager.cache.informers_for(kind), map_func=self._later)
        ctrl.enqueue(self.key)
        manager.add(ctrl)
        return ctrl

    def _later(self, _obj: Any = None) -> list[Request]:
        if self.controller is None or self.debounce <= 0:
            return [self.key]
        self.controller.queue.add_after(self.key, self.debounce)
        return []

    def reconcile(self, req: Request) -> Result | None:
        try:
            config: Obj = self.client.get(SRIOV_OPERATOR_CONFIG, consts.DEFAULT_CONFIG_NAME, self.namespace)
        except NotFound:
            config = {"spec": {}}
        all_nodes = self.client.list(NODE)
        nodes = daemon_nodes(config, all_nodes)
        states = {s["metadata"]["name"]: s for s in self.client.list(SRIOV_NETWORK_NODE_STATE, self.namespace)}
        for policy in self.client.list(SRIOV_NETWORK_NODE_POLICY, self.namespace):
            if policy["metadata"]["name"] != consts.DEFAULT_POLICY_NAME:
                self._write(SRIOV_NETWORK_NODE_POLICY, policy, policy_status(policy, nodes, states))
        for pool in self.client.list(SRIOV_NETWORK_POOL_CONFIG, self.namespace):
            if not is_hw_offload_pool(pool):
                self._write(SRIOV_NETWORK_POOL_CONFIG, pool, pool_status(pool, all_nodes, states))
        return Result(requeue_after=RESYNC_PERIOD)

    def _write(self, kind: Kind, obj: Obj, status: dict[str, Any]) -> None:
        meta = obj["metadata"]
        old = obj.get("status") or {}
        status["conditions"] = merged_conditions(old.get("conditions") or [], status["conditions"],
                                                 meta.get("generation"))
        if _same(old, status):
            return
        body = {"apiVersion": kind.api_version, "kind": kind.kind,
                "metadata": {"name": meta["name"], "namespace": meta.get("namespace")}, "status": status}
        try:
            self.client.patch(kind, meta["name"], body, meta.get("namespace"), patch_type="apply",
                              field_manager=consts.FIELD_MANAGER, subresource="status", force=True)
            self.writes += 1
        except (NotFound, Conflict) as exc:  # deleted meanwhile, or changed: the next event recomputes
            log.info("status not written", kind=kind.kind, name=meta["name"], error=str(exc))
