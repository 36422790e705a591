"""`sriovop explain node|policy`: for every policy and PF, selected or not and why, with the node's
drain/reboot state and last error. The verdicts are `selection.node_verdicts` over the spec the
operator's own sync computes (`node_policy_desired.sync_outcome`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sriovop.api.v1 import consts
from sriovop.controllers.node_policy_desired import NodeOutcome, status_interfaces, sync_outcome
from sriovop.host.decision import missing_kernel_args
from sriovop.plan.compute import host_facts
from sriovop.plan.selection import node_verdicts
from sriovop.plan.snapshot import Snapshot
from sriovop.status.drift import node_drift

Obj = Mapping[str, Any]


class ExplainError(LookupError):
    """The named node or policy does not exist (the message says where it was looked for)."""


def _node_entry(snap: Snapshot, outcome: NodeOutcome, ordered: list[Obj], policy: str | None) -> dict[str, Any]:
    state = outcome.state or {}
    ann = (state.get("metadata") or {}).get("annotations") or {}
    status = state.get("status") or {}
    ifaces = status_interfaces(state)
    spec_ifaces = list(outcome.spec.get("interfaces") or [])
    verdicts = [v for v in node_verdicts(ordered, outcome.node, ifaces, spec_ifaces, snap.nics)
                if policy is None or v.policy == policy]
    facts, note = host_facts(state)
    entry: dict[str, Any] = {
        "name": outcome.name,
        "syncStatus": status.get("syncStatus") or "",
        "lastSyncError": status.get("lastSyncError") or "",
        "drain": {"desired": ann.get(consts.NODE_STATE_DRAIN_ANNOTATION) or "",
                  "current": ann.get(consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) or "",
                  "unschedulable": bool((outcome.node.get("spec") or {}).get("unschedulable"))},
        "missingKernelArgs": missing_kernel_args((state.get("spec") or {}).get("interfaces") or [], facts),
        "pfs": [],
        "unselected": [],
        "warnings": node_drift(list((state.get("spec") or {}).get("interfaces") or []), list(ifaces)).warnings,
    }
    if note:
        entry["factsNote"] = note
    if outcome.state is None:
        entry["note"] = "no NodeState yet"
    elif not ifaces:
        entry["note"] = "the daemon has not reported any interface yet: no policy can select a PF"
    if outcome.error:
        entry["lastSyncError"] = entry["lastSyncError"] or outcome.error
    seen: set[str] = set()
    for v in verdicts:
        if v.field == "nodeSelector" and v.policy not in seen:
            seen.add(v.policy)
            entry["unselected"].append(v.to_json())
    by_pci = {str(i.get("pciAddress")): i for i in spec_ifaces}
    for iface in ifaces:
        pci = str(iface.get("pciAddress"))
        entry["pfs"].append({
            "name": iface.get("name") or "", "pciAddress": pci, "vendor": iface.get("vendor") or "",
            "deviceID": iface.get("deviceID") or "", "numVfs": int(iface.get("numVfs") or 0),
            "totalvfs": int(iface.get("totalvfs") or 0),
            "specVfs": int((by_pci.get(pci) or {}).get("numVfs") or 0),
            "vfGroups": list((by_pci.get(pci) or {}).get("vfGroups") or []),
            "policies": [v.to_json() for v in verdicts if v.pci_address == pci and v.field != "nodeSelector"],
        })
    return entry


def explain(snap: Snapshot, *, node: str | None = None, policy: str | None = None) -> dict[str, Any]:
    outcome = sync_outcome(snap.config, snap.policies, snap.nodes, snap.states, snap.pools, snap.nics)
    if policy is not None and not any(p["metadata"]["name"] == policy for p in outcome.policies):
        raise ExplainError(f"SriovNetworkNodePolicy {snap.namespace}/{policy} does not exist")
    notes = list(snap.notes)
    if node is not None:
        chosen = [o for o in outcome.nodes if o.name == node]
        if not chosen:
            if not any(n["metadata"]["name"] == node for n in snap.nodes):
                raise ExplainError(f"node {node} does not exist")
            notes.append(f"node {node} is not selected by the SriovOperatorConfig configDaemonNodeSelector: "
                         "it has no config daemon and no NodeState, so no policy applies to it")
    else:
        chosen = list(outcome.nodes)
    return {"namespace": snap.namespace, "node": node, "policy": policy,
            "nodes": [_node_entry(snap, o, outcome.policies, policy) for o in chosen], "notes": notes}
