"""The hollow fleet's shape: which node is called what, carries which labels, NIC model and PF names.

Deterministic from (prefix, index) so every process (the supervisor registering Nodes, a worker
building hosts, a benchmark choosing pools) derives the same fleet without sharing state. Nodes differ
the way a real fleet does: each has its own hostname label, a rack and zone, a NIC model from the
supported list, and PF names of its own (no two nodes share a PF name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Label on every hollow Node: the fleet's selector for clean-up (value: the fleet's prefix).
FLEET_LABEL = "sriovop.io/hollow-fleet"
#: Label a benchmark or test uses to split the fleet into pools (value: the pool name).
POOL_LABEL = "sriovop.io/hollow-pool"
WORKER_ROLE = "node-role.kubernetes.io/worker"
#: Simulator NIC models (sriovop.sim.models) whose IDs are in the default supported-nic-ids list;
#: all Intel, so one policy per vendor selects every node.
MODELS = ("xxv710", "e810", "82576")
#: PFs per hollow host (the first two ports of its NIC).
PFS = 2
DEFAULT_PREFIX = "hollow"


@dataclass(frozen=True)
class HollowNode:
    prefix: str
    index: int

    @property
    def name(self) -> str:
        return f"{self.prefix}-{self.index:05d}"

    @property
    def model(self) -> str:
        return MODELS[self.index % len(MODELS)]

    @property
    def pf_names(self) -> tuple[str, ...]:
        """`ens<index+1>f<port>`: unique in the fleet, valid netdev names up to index 9,999,999."""
        return tuple(f"ens{self.index + 1}f{port}" for port in range(PFS))

    def labels(self, pool: str | None = None) -> dict[str, str]:
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            WORKER_ROLE: "",
            FLEET_LABEL: self.prefix,
            "topology.kubernetes.io/zone": f"zone-{self.index % 3}",
            "sriovop.io/hollow-rack": f"rack-{self.index // 40:04d}",
            "sriovop.io/hollow-nic": self.model,
        }
        if pool is not None:
            labels[POOL_LABEL] = pool
        return labels

    def node_object(self, pool: str | None = None) -> dict[str, Any]:
        """The Node as registered: labels, a providerID, no kubelet status (nothing reports it)."""
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": self.name, "labels": self.labels(pool)},
                "spec": {"providerID": f"hollow://{self.prefix}/{self.index}"}}


def fleet(count: int, prefix: str = DEFAULT_PREFIX) -> list[HollowNode]:
    if count < 0:
        raise ValueError(f"count: must not be negative, got {count}")
    return [HollowNode(prefix, i) for i in range(count)]


def pool_of(index: int, count: int, small_pool: int) -> str:
    """Two pools as the rollout benchmark uses them: the last `small_pool` nodes are `canary`, the
    rest `bulk` (index order interleaves models, so both pools mix NIC models)."""
    return "canary" if index >= count - small_pool else "bulk"
