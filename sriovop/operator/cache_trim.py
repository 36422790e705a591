"""What the operator's caches drop from each object before keeping it (informer transforms).

Only fields that no controller of the operator reads, and that it never writes back:
- Node `status` (conditions, addresses, capacity, images, nodeInfo): on a real cluster most of a
  Node's size (the image list alone often tens of KB). The controllers read a node's name, labels
  and annotations; they write Nodes only with merge patches of labels, annotations and
  spec.unschedulable.
- NodeState `status.interfaces[].Vfs`: one entry per configured VF (up to 128 per PF, each with its
  PCI address, MAC, driver, ...), the bulk of a configured node's NodeState. The controllers read
  each PF's own fields (name, pciAddress, vendor, deviceID, netFilter, ...) and never the VF list;
  the operator never writes a NodeState's status (the config daemon does).
"""

from __future__ import annotations

from typing import Any

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.runtime.cache.informer import Transform
from sriovop.runtime.kinds import NODE, Kind


def drop_node_status(node: dict[str, Any]) -> dict[str, Any]:
    node.pop("status", None)
    return node


def drop_vf_lists(state: dict[str, Any]) -> dict[str, Any]:
    status = state.get("status")
    if type(status) is dict:
        for iface in status.get("interfaces") or ():
            if type(iface) is dict:
                iface.pop("Vfs", None)
    return state


#: Per kind, the transform the operator's managers give their caches.
CACHE_TRANSFORMS: dict[Kind, Transform] = {NODE: drop_node_status, SRIOV_NETWORK_NODE_STATE: drop_vf_lists}
