"""What the operator's caches drop from each object before keeping it (informer transforms).

Only fields that no controller of the operator reads, and that it never writes back:
- Node `status` (conditions, addresses, capacity, images, nodeInfo): on a real cluster most of a
  Node's size (the image list alone often tens of KB). The controllers read a node's name, labels
  and annotations; they write Nodes only with merge patches of labels, annotations and
  spec.unschedulable.
- NodeState `status.interfaces[]`: every field but the ones a nicSelector matches on
  (`READ_PF_FIELDS`: vendor, deviceID, pciAddress for rootDevices, name and altNames for pfNames,
  netFilter), which also name the PF in the rendered spec and device-plugin config. Gone are the VF
  list (`Vfs`: one entry per configured VF, up to 128 per PF, the bulk of a configured node's
  NodeState) and the PF's MAC, driver, MTU, link type and speed, VF counts and eSwitch mode, which
  only the webhook (its own cache) and the config daemon read. The operator never writes a
  NodeState's status (the config daemon does). A status update that changes only dropped fields
  leaves the cached interfaces equal, so it triggers no policy sync, which it could not change.
  test_operator_cache_trim.py checks on random clusters that every sync outcome and policy status is
  the same from trimmed and from whole NodeStates.

After the trim a NodeState's `spec`, `status`, owner references and annotations are shared with every
equal one (`SharedParts`): nodes of one server model under one set of policies have equal PF lists and
equal specs, and every NodeState has the same owner. Nodes are not shared: their labels, annotations
and spec name the node (hostname, provider ID, pod CIDR, per-node annotations of network and storage
plugins), so their parts would only fill the table.
"""

from __future__ import annotations

from typing import Any

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.runtime.cache.informer import Transform
from sriovop.runtime.cache.shared_parts import SharedParts
from sriovop.runtime.kinds import NODE, Kind


def drop_node_status(node: dict[str, Any]) -> dict[str, Any]:
    node.pop("status", None)
    return node


#: The `status.interfaces[]` fields the operator's controllers read (see the module docstring).
READ_PF_FIELDS = frozenset({"name", "altNames", "pciAddress", "vendor", "deviceID", "netFilter"})


def keep_read_pf_fields(state: dict[str, Any]) -> dict[str, Any]:
    status = state.get("status")
    if type(status) is not dict:
        return state
    interfaces = status.get("interfaces")
    if type(interfaces) is list:
        # New dicts, not pops: a dict keeps the table size of its largest moment.
        status["interfaces"] = [{k: v for k, v in iface.items() if k in READ_PF_FIELDS}
                                if type(iface) is dict else iface for iface in interfaces]
    return state


#: One table for every manager's NodeState cache: the namespaced and the cluster-wide caches hold the
#: same NodeStates.
NODE_STATE_PARTS = SharedParts()


def trim_and_share_node_state(state: dict[str, Any]) -> dict[str, Any]:
    keep_read_pf_fields(state)
    for parent, key in ((state, "spec"), (state, "status"), (state.get("metadata"), "ownerReferences"),
                        (state.get("metadata"), "annotations")):
        if type(parent) is dict and type(parent.get(key)) in (dict, list):
            parent[key] = NODE_STATE_PARTS.share(parent[key])
    return state


#: Per kind, the transform the operator's managers give their caches.
CACHE_TRANSFORMS: dict[Kind, Transform] = {NODE: drop_node_status,
                                           SRIOV_NETWORK_NODE_STATE: trim_and_share_node_state}
