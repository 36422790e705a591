"""What `sriovop status` shows, gathered from NodeStates and Nodes in one pass.

The view joins spec (what was asked), status (what the daemon found) and the drain annotations, so an
operator on call can see at a glance which node is stuck and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.jsonstyle import camel_keys
from sriovop.runtime.client import Reader
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import NODE
from sriovop.status.drift import node_drift

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


@dataclass(frozen=True)
class ClusterStatus:
    namespace: str
    nodes: list[NodeStatus]

    def to_json(self) -> dict[str, Any]:
        """camelCase keys, as every `-o json` of sriovop (`sriovop.jsonstyle`)."""
        out: dict[str, Any] = camel_keys(asdict(self))
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
    names = model_names or {}
    nodes: list[NodeStatus] = []
    for state in sorted(reader.list(SRIOV_NETWORK_NODE_STATE, namespace), key=lambda s: s["metadata"]["name"]):
        meta, spec, status = state["metadata"], state.get("spec") or {}, state.get("status") or {}
        annotations = meta.get("annotations") or {}
        try:
            node = reader.get(NODE, meta["name"])
            node_annotation = (node["metadata"].get("annotations") or {}).get(consts.NODE_DRAIN_ANNOTATION, "")
            unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
        except NotFound:
            node_annotation, unschedulable = "(node gone)", False
        desired = {i.get("pciAddress"): i for i in spec.get("interfaces") or []}
        pfs = [_pf(i, desired.get(i.get("pciAddress")), names) for i in status.get("interfaces") or []]
        nodes.append(NodeStatus(
            node=meta["name"], sync_status=str(status.get("syncStatus") or "Unknown"),
            drain_requested=str(annotations.get(consts.NODE_STATE_DRAIN_ANNOTATION, "")),
            drain_current=str(annotations.get(consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT, "")),
            node_state_annotation=node_annotation, unschedulable=unschedulable,
            last_sync_error=str(status.get("lastSyncError") or ""), pfs=pfs,
            warnings=node_drift(list(spec.get("interfaces") or []), list(status.get("interfaces") or [])),
        ))
    return ClusterStatus(namespace=namespace, nodes=nodes)
