"""Defaults the mutating webhook adds to SriovNetworkNodePolicies (upstream's JSONPatch, field for field).

- `priority` absent -> 99 (the lowest priority; an explicit 0 stays 0).
- `isRdma` absent -> false.
- linkType IB (any case) and deviceType not vfio-pci -> isRdma true (IB VFs need RDMA).
- the deprecated policy named `default` is left alone.
The API server has already applied the CRD defaults (deviceType netdevice) before the webhook runs;
an absent deviceType is read as netdevice here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sriovop.api.v1.consts import (
    DEFAULT_POLICY_NAME,
    DEFAULT_POLICY_PRIORITY,
    DEVICE_TYPE_NETDEVICE,
    DEVICE_TYPE_VFIO_PCI,
    LINK_TYPE_IB,
)

JsonPatchOp = dict[str, Any]


def wants_rdma(spec: Mapping[str, Any]) -> bool:
    """IB link type forces RDMA unless the VFs go to vfio-pci."""
    link = spec.get("linkType")
    device_type = spec.get("deviceType") or DEVICE_TYPE_NETDEVICE
    return isinstance(link, str) and link.lower() == LINK_TYPE_IB and device_type != DEVICE_TYPE_VFIO_PCI


def policy_defaults_patch(policy: Mapping[str, Any]) -> list[JsonPatchOp]:
    """The RFC 6902 operations that default `policy` (empty when nothing is missing)."""
    if (policy.get("metadata") or {}).get("name") == DEFAULT_POLICY_NAME:
        return []
    spec = policy.get("spec")
    ops: list[JsonPatchOp] = []
    if not isinstance(spec, Mapping):
        # Nothing to default inside; the schema (spec.resourceName etc. are required) rejects it anyway.
        return ops
    if "priority" not in spec:
        ops.append({"op": "add", "path": "/spec/priority", "value": DEFAULT_POLICY_PRIORITY})
    if wants_rdma(spec):
        if spec.get("isRdma") is not True:
            ops.append({"op": "add", "path": "/spec/isRdma", "value": True})
    elif "isRdma" not in spec:
        ops.append({"op": "add", "path": "/spec/isRdma", "value": False})
    return ops


def apply_policy_defaults(policy: dict[str, Any]) -> dict[str, Any]:
    """Apply `policy_defaults_patch` in place (and return the policy)."""
    spec = policy.get("spec")
    for op in policy_defaults_patch(policy):
        assert isinstance(spec, dict)
        spec[op["path"].rsplit("/", 1)[1]] = op["value"]
    return policy


def policy_priority(policy: Mapping[str, Any]) -> int:
    """The effective priority (lower number wins); absent means the webhook default 99."""
    value = (policy.get("spec") or {}).get("priority")
    return DEFAULT_POLICY_PRIORITY if value is None else int(value)
