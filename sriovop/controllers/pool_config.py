"""SriovNetworkPoolConfig: which pool a node is in, how many of its nodes may drain at once, RDMA mode.

Pools act indirectly: the drain controller asks `find_node_pool` + `max_unavailable` before it lets a
node start draining, and the policy controller copies `rdma_modes` into NodeState specs. The
reconciler here only owns the finalizer of OVS hardware-offload pools (whose MachineConfig side exists
on OpenShift only) and makes pool overlaps visible: a node selected by two pools cannot drain, so
every such node gets a Warning Event on its NodeState instead of a silent stall.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE, SRIOV_NETWORK_POOL_CONFIG
from sriovop.api.v1.maxunavailable import MaxUnavailableError, max_unavailable
from sriovop.runtime.controller import Controller, Funcs, Request, Result
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import NODE

log = structlog.get_logger(__name__)

Obj = Mapping[str, Any]

#: The pool a node falls into when no SriovNetworkPoolConfig selects it.
DEFAULT_POOL_NAME = "default"
REASON_POOL_CONFLICT = "PoolConfigConflict"

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class PoolLookupError(Exception):
    """A node belongs to more than one pool (or a pool is malformed): it cannot be drained."""


# --- label selectors ------------------------------------------------------------------------------


def selector_matches(selector: Obj | None, labels: Mapping[str, str] | None) -> bool:
    """metav1.LabelSelectorAsSelector(...).Matches: None and {} both select everything.

    Raises ValueError naming the offending requirement when the selector is malformed, as the Go
    conversion does, so a broken pool is reported rather than silently matching nothing.
    """
    if not selector:
        return True
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        key = expr.get("key") or ""
        op = expr.get("operator")
        values = list(expr.get("values") or [])
        where = f"matchExpressions[{i}]"
        if not key:
            raise ValueError(f"{where}.key must not be empty")
        if op not in _OPERATORS:
            raise ValueError(f"{where}.operator {op!r} is not one of {', '.join(_OPERATORS)}")
        if op in ("In", "NotIn") and not values:
            raise ValueError(f"{where}.values must be non-empty for operator {op}")
        if op in ("Exists", "DoesNotExist") and values:
            raise ValueError(f"{where}.values must be empty for operator {op}")
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


# --- pool lookup ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodePool:
    """The pool a node is in and every node of that pool (the drain capacity is counted over them)."""

    name: str
    max_unavailable: int | str | None
    rdma_mode: str | None
    nodes: tuple[str, ...] = field(default_factory=tuple)
    is_default: bool = False

    def limit(self) -> int:
        """The pool's drain budget; raises MaxUnavailableError for a malformed spec.maxUnavailable."""
        return max_unavailable(self.max_unavailable, len(self.nodes))


def is_hw_offload_pool(pool: Obj) -> bool:
    return bool(((pool.get("spec") or {}).get("ovsHardwareOffloadConfig") or {}).get("name"))


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def _labels(obj: Obj) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


class PoolMembership:
    """Upstream's findNodePoolConfig for any number of nodes over one listing of pools and nodes.

    Why a class: each pool's members are worked out once, so looking up every node costs
    O(nodes x pools). Looking each node up on its own recomputed every pool's members per node,
    O(nodes^2 x pools): at 500 nodes the pool-config controller's conflict check took most of the
    operator's CPU in a rollout (it runs on every pool status write), and it would have taken minutes
    per check at 5,000.

    Hardware-offload pools are ignored. A node matched by two pools raises PoolLookupError; a node
    matched by none falls into the built-in default pool (maxUnavailable 1) made of every node that
    no pool selects. Pools are visited in name order, so a node's error names the same pools each time.
    """

    def __init__(self, pools: Iterable[Obj], nodes: Sequence[Obj]) -> None:
        self._nodes = nodes
        #: (pool, its members) in name order, or (pool, why its selector is malformed).
        self._pools: list[tuple[Obj, tuple[str, ...] | str]] = []
        for pool in sorted((p for p in pools if not is_hw_offload_pool(p)), key=_name):
            selector = (pool.get("spec") or {}).get("nodeSelector")
            try:
                members: tuple[str, ...] | str = tuple(
                    _name(n) for n in nodes if selector_matches(selector, _labels(n)))
            except ValueError as exc:
                members = f"pool {_name(pool)}: spec.nodeSelector: {exc}"
            self._pools.append((pool, members))
        self._default: NodePool | None = None

    def pool_of(self, node: Obj) -> NodePool:
        """The pool of `node` (judged by its own labels); raises PoolLookupError."""
        node_name = _name(node)
        found: tuple[Obj, tuple[str, ...]] | None = None
        for pool, members in self._pools:
            if isinstance(members, str):
                raise PoolLookupError(members)
            if not selector_matches((pool.get("spec") or {}).get("nodeSelector"), _labels(node)):
                continue
            if found is not None:
                raise PoolLookupError(
                    f"node {node_name} belongs to more than one pool: {_name(found[0])} and {_name(pool)}")
            found = (pool, members)
        if found is None:
            return self._default_pool()
        spec = found[0].get("spec") or {}
        return NodePool(name=_name(found[0]), max_unavailable=spec.get("maxUnavailable"),
                        rdma_mode=spec.get("rdmaMode") or None, nodes=found[1])

    def _default_pool(self) -> NodePool:
        if self._default is None:
            pooled = {n for _pool, members in self._pools if isinstance(members, tuple) for n in members}
            self._default = NodePool(name=DEFAULT_POOL_NAME, max_unavailable=consts.DEFAULT_POOL_MAX_UNAVAILABLE,
                                     rdma_mode=None, nodes=tuple(_name(n) for n in self._nodes
                                                                 if _name(n) not in pooled),
                                     is_default=True)
        return self._default


def find_node_pool(node: Obj, pools: Iterable[Obj], nodes: Sequence[Obj]) -> NodePool:
    """Upstream's findNodePoolConfig for one node over already-listed pools and nodes (see
    PoolMembership; look many nodes up through one PoolMembership instead)."""
    return PoolMembership(pools, nodes).pool_of(node)


def rdma_modes(nodes: Sequence[Obj], pools: Iterable[Obj]) -> dict[str, str | None]:
    """node name -> the `spec.system.rdmaMode` its NodeState should carry: its pool's, or None for the
    default pool, a node in two pools or a malformed pool (the conflict is reported by the
    pool-config controller, and a policy sync is never blocked by a pool mistake)."""
    membership = PoolMembership(pools, nodes)
    out: dict[str, str | None] = {}
    for node in nodes:
        try:
            out[_name(node)] = membership.pool_of(node).rdma_mode
        except PoolLookupError:
            out[_name(node)] = None
    return out


def pool_conflicts(pools: Sequence[Obj], nodes: Sequence[Obj]) -> dict[str, str]:
    """node name → the lookup error, for every node that no single pool can own."""
    membership = PoolMembership(pools, nodes)
    out: dict[str, str] = {}
    for node in nodes:
        try:
            membership.pool_of(node)
        except PoolLookupError as exc:
            out[_name(node)] = str(exc)
    return out


# --- reconciler -----------------------------------------------------------------------------------


def _not_status_only(old: Obj, new: Obj) -> bool:
    """A pool update worth a pass: anything but its status (which the policy-status controller writes
    up to once a second during a rollout) and resyncs."""
    def what_counts(pool: Obj) -> tuple[Any, ...]:
        meta = pool.get("metadata") or {}
        return pool.get("spec"), meta.get("finalizers"), meta.get("deletionTimestamp"), meta.get("labels")
    return what_counts(old) != what_counts(new)

CONTROLLER_NAME = "sriovnetworkpoolconfig"
#: Upstream's ResyncPeriod for hardware-offload pools.
RESYNC_PERIOD = 300.0


class Recorder(Protocol):
    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None: ...


class PoolConfigReconciler:
    """Finalizer of OVS hardware-offload pools, and Events for nodes that are in two pools.

    On vanilla Kubernetes there is no MachineConfig to sync, so a hardware-offload pool only needs its
    finalizer added and, on deletion, removed. Conflicts are re-checked on every pool change (not on
    its status writes) against the cached pools and nodes, in one pass (PoolMembership).
    """

    def __init__(self, client: Any, namespace: str, recorder: Recorder | None = None) -> None:
        self.client = client  # a manager's DelegatingClient: cached reads, direct writes
        self.namespace = namespace
        self.recorder = recorder

    def setup(self, manager: Any) -> Controller:
        ctrl = Controller(CONTROLLER_NAME, self.reconcile, registry=manager.registry)
        ctrl.watches(manager.cache.informers_for(SRIOV_NETWORK_POOL_CONFIG),
                     predicates=[Funcs(on_update=_not_status_only)])
        manager.add(ctrl)
        return ctrl

    def reconcile(self, req: Request) -> Result | None:
        try:
            pool: Obj | None = self.client.get(SRIOV_NETWORK_POOL_CONFIG, req.name, req.namespace)
        except NotFound:
            pool = None
        self.report_conflicts()
        if pool is None:
            return None
        self._sync_finalizer(pool)
        if is_hw_offload_pool(pool) and not pool["metadata"].get("deletionTimestamp"):
            return Result(requeue_after=RESYNC_PERIOD)
        return None

    def _sync_finalizer(self, pool: Obj) -> None:
        meta = pool["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        has = consts.POOL_CONFIG_FINALIZER in finalizers
        if meta.get("deletionTimestamp"):
            if has:
                finalizers.remove(consts.POOL_CONFIG_FINALIZER)
                self._patch_finalizers(pool, finalizers)
            return
        if is_hw_offload_pool(pool) and not has:
            self._patch_finalizers(pool, [*finalizers, consts.POOL_CONFIG_FINALIZER])

    def _patch_finalizers(self, pool: Obj, finalizers: list[str]) -> None:
        meta = pool["metadata"]
        patch = {"metadata": {"finalizers": finalizers or None, "resourceVersion": meta.get("resourceVersion")}}
        self.client.patch(SRIOV_NETWORK_POOL_CONFIG, meta["name"], patch, meta.get("namespace"))

    def report_conflicts(self) -> dict[str, str]:
        """node name -> why no single pool owns it; each gets a Warning Event on its NodeState."""
        pools = self.client.list(SRIOV_NETWORK_POOL_CONFIG, self.namespace)
        nodes = self.client.list(NODE)
        conflicts = pool_conflicts(pools, nodes)
        for node_name, message in sorted(conflicts.items()):
            log.warning("node is in more than one pool; it cannot be drained", node=node_name, error=message)
            if self.recorder is None:
                continue
            try:
                state = self.client.get(SRIOV_NETWORK_NODE_STATE, node_name, self.namespace)
            except NotFound:
                continue
            self.recorder.event(state, "Warning", REASON_POOL_CONFLICT, message)
        return conflicts


__all__ = [
    "DEFAULT_POOL_NAME", "REASON_POOL_CONFLICT", "MaxUnavailableError", "NodePool", "PoolConfigReconciler",
    "PoolLookupError", "PoolMembership", "find_node_pool", "is_hw_offload_pool", "max_unavailable", "pool_conflicts",
    "rdma_modes", "selector_matches",
]
