"""What `sriovop status` shows, gathered from NodeStates, Nodes and pools in one pass.

The view joins spec (what was asked), status (what the daemon found) and the drain annotations, so an
operator on call can see at a glance which node is stuck and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE, SRIOV_NETWORK_POOL_CONFIG
from sriovop.controllers.policy_status import APPLYING, READY, name_list, node_phase
from sriovop.controllers.pool_config import PoolLookupError, PoolMembership
from sriovop.jsonstyle import camel_keys
from sriovop.runtime.client import Reader
from sriovop.runtime.kinds import NODE
from sriovop.status.drift import node_drift
from sriovop.status.pools import NO_POOL, PoolLimit, PoolProgress, pool_progress

_VENDORS = {consts.VENDOR_INTEL: "Intel", consts.VENDOR_MELLANOX: "Mellanox"}


@dataclass(frozen=True)
class VfGroupStatus:
    resource: str
    vf_range: str
    device_type: str
    policy: str


@dataclass(frozen=True)
class PfStatus:
    name: str
    pci_address: str
    model: str
    num_vfs: int
    total_vfs: int
    desired_vfs: int | None
    mtu: int | None
    link: str
    vf_groups: list[VfGroupStatus] = field(default_factory=list)


@dataclass(frozen=True)
class NodeStatus:
    node: str
    sync_status: str
    drain_requested: str
    drain_current: str
    node_state_annotation: str
    unschedulable: bool
    last_sync_error: str
    pfs: list[PfStatus] = field(default_factory=list)
    #: Each field where the host does not match the spec (`sriovop.status.drift`).
    warnings: list[str] = field(default_factory=list)
    #: The drain controller's pool of the node (`pools.NO_POOL` when it has none) and the node's phase
    #: in a rollout (`phase_of`).
    pool: str = ""
    phase: str = ""


@dataclass(frozen=True)
class ClusterStatus:
    namespace: str
    nodes: list[NodeStatus]
    #: The rollout's progress per pool, over the same nodes.
    pools: list[PoolProgress] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """camelCase keys, as every `-o json` of sriovop (`sriovop.jsonstyle`)."""
        out: dict[str, Any] = camel_keys(asdict(self))
        return out

    def summary_json(self) -> dict[str, Any]:
        """`to_json` without the nodes (`status --summary`): converting 5,000 nodes' dataclasses took
        longer than reading them."""
        out: dict[str, Any] = camel_keys({"namespace": self.namespace, "pools": [asdict(p) for p in self.pools]})
        return out

    @property
    def converged(self) -> bool:
        return bool(self.nodes) and all(n.sync_status == consts.SYNC_STATUS_SUCCEEDED for n in self.nodes)


def model_names(supported_nic_ids: Mapping[str, str]) -> dict[tuple[str, str], str]:
    """(vendor, PF device) → label, from the supported-nic-ids data ("Intel_i40e_XXV710": "8086 158b 154c")."""
    names: dict[tuple[str, str], str] = {}
    for label, ids in supported_nic_ids.items():
        parts = str(ids).split()
        if len(parts) >= 2:
            names[(parts[0], parts[1])] = label.replace("_", " ")
    return names


def _model(iface: Mapping[str, Any], model_names: Mapping[tuple[str, str], str]) -> str:
    vendor, device = str(iface.get("vendor", "")), str(iface.get("deviceID", ""))
    known = model_names.get((vendor, device))
    if known:
        return known
    return f"{_VENDORS.get(vendor, vendor or '?')} {device or '?'}".strip()


def _pf(
    iface: Mapping[str, Any], desired: Mapping[str, Any] | None, model_names: Mapping[tuple[str, str], str]
) -> PfStatus:
    groups = [
        VfGroupStatus(
            resource=str(g.get("resourceName", "")), vf_range=str(g.get("vfRange", "")),
            device_type=str(g.get("deviceType", "")), policy=str(g.get("policyName", "")),
        )
        for g in (desired or {}).get("vfGroups") or []
    ]
    speed = str(iface.get("linkSpeed") or "")
    state = str(iface.get("linkAdminState") or "")
    link = " ".join(p for p in (str(iface.get("linkType") or ""), state, speed) if p) or "-"
    return PfStatus(
        name=str(iface.get("name") or "-"), pci_address=str(iface.get("pciAddress", "")),
        model=_model(iface, model_names), num_vfs=int(iface.get("numVfs") or 0),
        total_vfs=int(iface.get("totalvfs") or 0),
        desired_vfs=int(desired["numVfs"]) if desired and "numVfs" in desired else None,
        mtu=int(iface["mtu"]) if iface.get("mtu") else None, link=link, vf_groups=groups,
    )


def collect(
    reader: Reader, namespace: str, model_names: Mapping[tuple[str, str], str] | None = None
) -> ClusterStatus:
    """Every NodeState with its Node and pool, from three lists (NodeStates, Nodes, pools): a GET per
    node would be 5,000 requests at 5,000 nodes."""
    names = model_names or {}
    nodes_by_name = {n["metadata"]["name"]: n for n in reader.list(NODE)}
    membership = PoolMembership(reader.list(SRIOV_NETWORK_POOL_CONFIG, namespace), list(nodes_by_name.values()))
    limits: dict[str, PoolLimit] = {}
    #: Why each node of NO_POOL has no pool.
    unpooled: list[str] = []
    nodes: list[NodeStatus] = []
    for state in sorted(reader.list(SRIOV_NETWORK_NODE_STATE, namespace), key=lambda s: s["metadata"]["name"]):
        meta, spec, status = state["metadata"], state.get("spec") or {}, state.get("status") or {}
        annotations = meta.get("annotations") or {}
        node = nodes_by_name.get(meta["name"])
        if node is None:
            node_annotation, unschedulable, pool = "(node gone)", False, NO_POOL
            unpooled.append(f"{meta['name']}: its Node is gone")
        else:
            node_annotation = (node["metadata"].get("annotations") or {}).get(consts.NODE_DRAIN_ANNOTATION, "")
            unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
            pool = _pool_of(membership, node, limits, unpooled)
        desired = {i.get("pciAddress"): i for i in spec.get("interfaces") or []}
        pfs = [_pf(i, desired.get(i.get("pciAddress")), names) for i in status.get("interfaces") or []]
        drift = node_drift(list(spec.get("interfaces") or []), list(status.get("interfaces") or []))
        nodes.append(NodeStatus(
            node=meta["name"], sync_status=str(status.get("syncStatus") or "Unknown"),
            drain_requested=str(annotations.get(consts.NODE_STATE_DRAIN_ANNOTATION, "")),
            drain_current=str(annotations.get(consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT, "")),
            node_state_annotation=node_annotation, unschedulable=unschedulable,
            last_sync_error=str(status.get("lastSyncError") or ""), pfs=pfs, warnings=drift.warnings,
            pool=pool, phase=phase_of(state, drift.pending),
        ))
    if unpooled:
        limits[NO_POOL] = PoolLimit(
            None, None, f"the drain controller will not drain these nodes: {name_list(unpooled, '; ')}")
    return ClusterStatus(namespace=namespace, nodes=nodes, pools=pool_progress(nodes, limits))


def phase_of(state: Mapping[str, Any], pending: bool) -> str:
    """The phase the operator's Ready/Progressing conditions count (`policy_status.node_phase`), except
    that a node reporting Succeeded whose host does not match its spec yet (`pending`: a change its
    daemon has not picked up) is applying, not ready."""
    phase = node_phase(state)
    return APPLYING if phase == READY and pending else phase


def _pool_of(membership: PoolMembership, node: Mapping[str, Any], limits: dict[str, PoolLimit],
             unpooled: list[str]) -> str:
    """The node's pool name, its limit recorded in `limits` the first time the pool is seen (as the
    drain controller counts it: over every node the pool selects); NO_POOL, with the reason added
    to `unpooled`, for a node no single pool owns."""
    try:
        pool = membership.pool_of(node)
    except PoolLookupError as exc:
        unpooled.append(str(exc))
        return NO_POOL
    if pool.name not in limits:
        try:
            limits[pool.name] = PoolLimit(pool.max_unavailable, pool.limit())
        except ValueError as exc:
            limits[pool.name] = PoolLimit(pool.max_unavailable, None,
                                          f"the drain controller will not drain these nodes: {exc}")
    return pool.name
