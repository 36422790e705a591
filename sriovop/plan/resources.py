"""Device-plugin resources before and after a change, per node: what each advertises (allocatable) and
who uses a resource about to vanish.

Allocatable is counted from the NodeState spec's VF groups (the VFs the device plugin is configured to
advertise under each resourceName once the daemon has applied the spec); `reported` is what the
Node's status.allocatable says right now.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sriovop.host.errors import ValidationError
from sriovop.host.plan import parse_vf_range

Obj = Mapping[str, Any]


def _selectors(data: str | None) -> dict[str, Any]:
    if not data:
        return {}
    try:
        entries = json.loads(data).get("resourceList") or []
    except (ValueError, AttributeError):
        return {}
    return {str(e.get("resourceName")): e.get("selectors") or {} for e in entries if isinstance(e, dict)}


def allocatable(spec_interfaces: Sequence[Obj]) -> dict[str, int]:
    """resourceName → VFs the spec's VF groups give it on this node."""
    counts: dict[str, int] = {}
    for iface in spec_interfaces:
        for group in iface.get("vfGroups") or []:
            try:
                lo, hi = parse_vf_range(str(group.get("vfRange") or ""))
            except ValidationError:
                continue
            name = str(group.get("resourceName") or "")
            counts[name] = counts.get(name, 0) + hi - lo + 1
    return counts


def resource_changes(before_cm: str | None, after_cm: str | None, before_spec: Sequence[Obj],
                     after_spec: Sequence[Obj], node: Obj, prefix: str) -> dict[str, list[dict[str, Any]]]:
    """added / removed / changed resources of one node, each with allocatable before and after; a
    resource is changed when its selectors or its count change."""
    old_sel, new_sel = _selectors(before_cm), _selectors(after_cm)
    old_n, new_n = allocatable(before_spec), allocatable(after_spec)
    reported = ((node.get("status") or {}).get("allocatable") or {})
    out: dict[str, list[dict[str, Any]]] = {"added": [], "removed": [], "changed": []}
    for name in sorted(set(old_sel) | set(new_sel) | set(old_n) | set(new_n)):
        row: dict[str, Any] = {"resourceName": name, "allocatable": {"before": old_n.get(name, 0),
                                                                     "after": new_n.get(name, 0)}}
        have = reported.get(f"{prefix}/{name}")
        if have is not None:
            row["allocatable"]["reported"] = int(str(have)) if str(have).isdigit() else have
        in_old, in_new = name in old_sel or name in old_n, name in new_sel or name in new_n
        if in_new and not in_old:
            out["added"].append(row)
        elif in_old and not in_new:
            out["removed"].append(row)
        elif old_sel.get(name) != new_sel.get(name) or old_n.get(name, 0) != new_n.get(name, 0):
            row["selectorsChanged"] = old_sel.get(name) != new_sel.get(name)
            out["changed"].append(row)
    return out


def resource_users(resource: str, node: str, networks: Sequence[Obj], pods: Sequence[Obj],
                   pod_resources: Any, prefix: str) -> dict[str, list[str]]:
    """The networks (namespace/name, every namespace) whose resourceName is `resource`, and the pods on
    `node` that request it."""
    nets = sorted(f"{n['metadata'].get('namespace', '')}/{n['metadata']['name']}" for n in networks
                  if (n.get("spec") or {}).get("resourceName") == resource)
    users = sorted(f"{p['metadata'].get('namespace', '')}/{p['metadata']['name']}" for p in pods
                   if (p.get("spec") or {}).get("nodeName") == node and resource in pod_resources(p, prefix))
    return {"networks": nets, "pods": users}
