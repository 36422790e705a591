"""Policy defaulting: the JSONPatch upstream's mutating webhook returns, so stored objects look the same."""

from __future__ import annotations

from typing import Any

from sriovop.api.v1 import consts

Patch = list[dict[str, Any]]


def policy_defaults_patch(policy: dict[str, Any]) -> Patch:
    """`priority` 99 when absent; `isRdma` false when absent, and true whenever linkType is IB and the
    VFs are not vfio-pci (overriding an explicit false, as upstream does). The policy named `default`
    is left alone, and so is an object without a spec (validation rejects it)."""
    meta = policy.get("metadata")
    if isinstance(meta, dict) and meta.get("name") == consts.DEFAULT_POLICY_NAME:
        return []
    spec = policy.get("spec")
    if not isinstance(spec, dict):
        return []
    patch: Patch = []
    if "priority" not in spec:
        patch.append({"op": "add", "path": "/spec/priority", "value": consts.DEFAULT_POLICY_PRIORITY})
    link_type = spec.get("linkType")
    is_ib = isinstance(link_type, str) and link_type.lower() == consts.LINK_TYPE_IB
    if is_ib and spec.get("deviceType") != consts.DEVICE_TYPE_VFIO_PCI:
        patch.append({"op": "add", "path": "/spec/isRdma", "value": True})
    elif "isRdma" not in spec:
        patch.append({"op": "add", "path": "/spec/isRdma", "value": False})
    return patch
