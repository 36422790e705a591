"""A rollout's progress per pool: how many of a pool's nodes are in each phase, against its drain budget.

At thousands of nodes the per-node view no longer fits a screen; what an on-call engineer asks during a
rollout is per pool: how many nodes are done, how many hold a drain slot out of how many the pool's
`maxUnavailable` allows, how many wait for one, and which failed. The phases are those the operator's
Ready/Progressing/Degraded conditions on policies and pools count. Pools are the drain controller's
(`controllers.pool_config.PoolMembership`: the built-in `default` pool holds every node no pool
selects), so the counts are the ones it acts on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from sriovop.controllers.drain.states import occupies_slot
from sriovop.controllers.policy_status import APPLYING, DRAINING, FAILED, READY, UNKNOWN, WAITING

#: The row of nodes the drain controller cannot place in a pool (in two pools, or their Node gone).
NO_POOL = "(no pool)"


@dataclass(frozen=True)
class PoolLimit:
    """A pool's drain budget: its `maxUnavailable`, the limit it gives over the pool's nodes (-1:
    unlimited; None when the value is malformed or the nodes have no pool) and why not."""

    max_unavailable: int | str | None
    limit: int | None
    error: str = ""


@dataclass(frozen=True)
class PoolProgress:
    name: str
    max_unavailable: int | str | None
    limit: int | None
    #: NodeStates of the pool's nodes (nodes without SR-IOV state are not counted), then how many of
    #: them are in each phase (`model.phase_of`; applying includes the nodes with no status yet).
    nodes: int
    ready: int
    applying: int
    waiting: int
    draining: int
    failed: int
    cordoned: int
    #: Nodes holding a drain slot (`current-state` Draining or DrainComplete), whatever their phase: a
    #: failed node retrying inside its slot still holds it. What the pool's limit bounds.
    slots_held: int
    #: Why the drain controller cannot drain these nodes, when it cannot (a malformed maxUnavailable, a
    #: node in two pools).
    error: str = ""
    #: Every node of the pool that is not ready, by name.
    not_ready: list[str] = field(default_factory=list)


class NodeView(Protocol):
    """What pool_progress reads of a node's status (`model.NodeStatus`)."""

    @property
    def node(self) -> str: ...
    @property
    def phase(self) -> str: ...
    @property
    def pool(self) -> str: ...
    @property
    def unschedulable(self) -> bool: ...
    @property
    def drain_current(self) -> str: ...


def pool_progress(nodes: Iterable[NodeView], limits: Mapping[str, PoolLimit]) -> list[PoolProgress]:
    """One row per pool that has NodeStates, in name order, with its counts over `nodes`; `limits`
    by pool name."""
    members: dict[str, list[NodeView]] = {}
    for n in nodes:
        members.setdefault(n.pool, []).append(n)
    rows: list[PoolProgress] = []
    for name in sorted(members):
        group = members[name]
        phases = [n.phase for n in group]
        limit = limits.get(name) or PoolLimit(None, None)
        rows.append(PoolProgress(
            name=name, max_unavailable=limit.max_unavailable, limit=limit.limit, nodes=len(group),
            ready=phases.count(READY), applying=phases.count(APPLYING) + phases.count(UNKNOWN),
            waiting=phases.count(WAITING), draining=phases.count(DRAINING),
            failed=phases.count(FAILED), cordoned=sum(1 for n in group if n.unschedulable),
            slots_held=sum(1 for n in group if occupies_slot(n.drain_current)), error=limit.error,
            not_ready=[n.node for n in group if n.phase != READY]))
    return rows
