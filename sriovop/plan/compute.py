"""`sriovop plan`: what applying (or deleting) some policies would do, computed with the deciding code.

- admission: the API server's schema check and defaults, the mutating webhook's defaults (when the
  operator webhook is enabled), then the validating webhook's `validate_policy`, policy by policy in
  file order, each judged against the cluster plus the policies admitted before it (as `kubectl apply`
  sends them);
- NodeState specs and the device-plugin ConfigMap: `node_policy_desired.sync_outcome`, the functions
  the operator's sync writes with, before and after the change;
- disruption: `host.decision.decide_node`, the daemon's own drain/reboot decision (its plugins' rules:
  generic with OVS bridges, Mellanox firmware, virtual platform), fed with the host facts the daemon
  publishes on its NodeState;
- pools: `pool_config.find_node_pool` and its `maxUnavailable` limit, as the drain controller counts.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY
from sriovop.api.v1.policydefaults import apply_policy_defaults
from sriovop.api.v1.schema.defaults import apply_defaults
from sriovop.api.v1.schema.validate import validate_object
from sriovop.controllers.drain.states import is_full_drain
from sriovop.controllers.node_policy_desired import NodeOutcome, normalized, status_interfaces, sync_outcome
from sriovop.controllers.pool_config import PoolLookupError, find_node_pool
from sriovop.host.decision import HOST_FACTS_ANNOTATION, HostFacts, decide_node
from sriovop.host.errors import HostError
from sriovop.plan.selection import TAKEN, node_verdicts
from sriovop.plan.snapshot import Snapshot
from sriovop.policyrules.judge import judge_policy
from sriovop.policyrules.view import StaticClusterView

Obj = Mapping[str, Any]

EXIT_OK = 0
EXIT_DENIED = 1
EXIT_DISRUPTIVE = 2


@dataclass
class PolicyAdmission:
    policy: str
    operation: str
    allowed: bool
    message: str = ""
    warnings: list[str] = field(default_factory=list)


def admitted_object(policy: Obj, snap: Snapshot) -> dict[str, Any]:
    """The policy as it would be stored: CRD defaults, then the mutating webhook's when it runs."""
    obj = copy.deepcopy(dict(policy))
    obj.setdefault("spec", {})
    apply_defaults(SRIOV_NETWORK_NODE_POLICY, obj)
    if snap.webhook_enabled:
        apply_policy_defaults(obj)
    return obj


def admit(snap: Snapshot, given: Sequence[Obj], delete: bool) -> tuple[list[PolicyAdmission], list[Obj]]:
    """Each given policy judged in order; returns the verdicts and the policies the cluster ends with."""
    current = {p["metadata"]["name"]: p for p in snap.policies}
    verdicts: list[PolicyAdmission] = []
    for raw in given:
        name = raw["metadata"]["name"]
        old = current.get(name)
        if delete:
            if old is None:
                verdicts.append(PolicyAdmission(name, "DELETE", True, warnings=[
                    f"policy {name} does not exist: nothing to delete"]))
                continue
            obj, operation = None, "DELETE"
        else:
            obj = admitted_object(raw, snap)
            operation = "UPDATE" if old is not None else "CREATE"
            errors = validate_object(SRIOV_NETWORK_NODE_POLICY, obj)
            if errors:
                verdicts.append(PolicyAdmission(name, operation, False, "the API server rejects it: " + "; ".join(
                    str(e) for e in errors)))
                continue
        view = StaticClusterView(nodes=[dict(n) for n in snap.nodes],
                                 node_states=[dict(s) for s in snap.states.values()],
                                 policies=[dict(p) for p in current.values()], nics=snap.nics)
        subject = obj if obj is not None else dict(old or {})
        verdict = judge_policy(subject, name, snap.namespace, operation, snap.namespace, view)
        message = "" if verdict.denied is None else f"{verdict.denied.field}: {verdict.denied.reason}"
        verdicts.append(PolicyAdmission(name, operation, verdict.allowed, message, list(verdict.warnings)))
        if not verdict.allowed:
            continue
        if obj is None:
            current.pop(name, None)
        else:
            current[name] = obj
    return verdicts, list(current.values())


def host_facts(state: Obj | None) -> tuple[HostFacts, str]:
    """The daemon's published host facts; without them, what the spec implies (and a note)."""
    raw = (((state or {}).get("metadata") or {}).get("annotations") or {}).get(HOST_FACTS_ANNOTATION)
    if raw:
        try:
            return HostFacts.from_json(raw), ""
        except ValueError as exc:
            note = f"annotation {HOST_FACTS_ANNOTATION} unreadable ({exc})"
    else:
        note = f"the daemon has not published {HOST_FACTS_ANNOTATION}"
    spec_ifaces = ((state or {}).get("spec") or {}).get("interfaces") or []
    configured = {str(i.get("pciAddress")): bool(i.get("externallyManaged")) for i in spec_ifaces}
    return (HostFacts(configured=configured, iommu_args=("intel_iommu=on", "iommu=pt")),
            note + ": assumed the PFs of the current spec are configured and no IOMMU kernel argument is set")


def drain_scope(drain: bool, reboot: bool) -> str:
    """Which pods the drain controller evicts for the daemon's request (a partial or a full drain)."""
    if not drain:
        return "none"
    return "all-pods" if is_full_drain(consts.REBOOT_REQUIRED if reboot else consts.DRAIN_REQUIRED) else "sriov-pods"


def _resources(data: str | None) -> dict[str, dict[str, Any]]:
    if not data:
        return {}
    try:
        entries = json.loads(data).get("resourceList") or []
    except (ValueError, AttributeError):
        return {}
    return {str(e.get("resourceName")): e.get("selectors") or {} for e in entries if isinstance(e, dict)}


def resource_changes(before: str | None, after: str | None) -> dict[str, list[str]]:
    old, new = _resources(before), _resources(after)
    return {"added": sorted(set(new) - set(old)), "removed": sorted(set(old) - set(new)),
            "changed": sorted(r for r in set(old) & set(new) if old[r] != new[r])}


def _pf_rows(outcome: NodeOutcome) -> list[dict[str, Any]]:
    status = {str(i.get("pciAddress")): i for i in status_interfaces(outcome.state)}
    before = {str(i.get("pciAddress")): i for i in ((outcome.state or {}).get("spec") or {}).get("interfaces") or []}
    rows: list[dict[str, Any]] = []
    after = list(outcome.spec.get("interfaces") or [])
    for iface in after:
        pci = str(iface.get("pciAddress"))
        st, old = status.get(pci) or {}, before.get(pci) or {}
        rows.append({
            "pciAddress": pci, "name": iface.get("name") or st.get("name") or "",
            "numVfs": {"before": int(old.get("numVfs") or 0), "after": int(iface.get("numVfs") or 0),
                       "host": int(st.get("numVfs") or 0)},
            "mtu": {"before": int(old.get("mtu") or 0), "after": int(iface.get("mtu") or 0)},
            "linkType": iface.get("linkType") or "", "eSwitchMode": iface.get("eSwitchMode") or "",
            "vfGroups": [dict(g) for g in iface.get("vfGroups") or []],
            "action": "unchanged" if normalized(old) == normalized(iface) else "configure" if old else "add",
        })
    wanted = {str(i.get("pciAddress")) for i in after}
    for pci, old in before.items():
        if pci not in wanted:
            rows.append({"pciAddress": pci, "name": old.get("name") or (status.get(pci) or {}).get("name") or "",
                         "numVfs": {"before": int(old.get("numVfs") or 0), "after": 0,
                                    "host": int((status.get(pci) or {}).get("numVfs") or 0)},
                         "mtu": {"before": int(old.get("mtu") or 0), "after": 0}, "linkType": "", "eSwitchMode": "",
                         "vfGroups": [], "action": "reset"})
    return rows


def compute_plan(snap: Snapshot, given: Sequence[Obj], delete: bool = False) -> dict[str, Any]:
    verdicts, final = admit(snap, given, delete)
    allowed = all(v.allowed for v in verdicts)
    after = sync_outcome(snap.config, final, snap.nodes, snap.states, snap.pools, snap.nics)
    given_names = {p["metadata"]["name"] for p in given}
    notes = list(snap.notes)
    if not snap.webhook_enabled:
        notes.append("no admission webhook for policies is deployed: its defaults are not applied and nothing "
                     "is denied; the admission result is what it would say")
    nodes: list[dict[str, Any]] = []
    for outcome in after.nodes:
        state = outcome.state
        current = dict((state or {}).get("spec") or {})
        changed = state is None or normalized(current) != normalized(outcome.spec)
        entry: dict[str, Any] = {
            "name": outcome.name, "changed": changed, "disruption": "none",
            "spec": {"interfaces": list(outcome.spec.get("interfaces") or [])},
        }
        for key in ("system", "bridges"):
            if key in outcome.spec:
                entry["spec"][key] = outcome.spec[key]
        if state is None:
            entry["note"] = "no NodeState yet: the operator creates an empty one; the daemon reports the host first"
        elif not status_interfaces(state):
            entry["note"] = "the daemon has not reported interfaces yet: the operator leaves the spec alone"
        if outcome.error:
            entry["error"] = outcome.error
        if changed and state is not None:
            facts, fact_note = host_facts(state)
            if fact_note:
                entry["factsNote"] = fact_note
            try:
                result = decide_node(entry["spec"], state.get("status"), facts)
            except HostError as exc:
                entry["daemonError"] = f"the daemon would refuse this spec: {exc}"
            else:
                entry["disruption"] = result.level
                entry["drainScope"] = drain_scope(result.drain, result.reboot)
                entry["drainReasons"] = list(result.drain_reasons)
                entry["missingKernelArgs"] = list(result.missing_kernel_args)
                entry["rebootReasons"] = list(result.reboot_reasons)
        entry["pfs"] = _pf_rows(outcome)
        verdicts_here = node_verdicts(after.policies, outcome.node, status_interfaces(state),
                                      entry["spec"]["interfaces"], snap.nics)
        entry["selection"] = [v.to_json() for v in verdicts_here
                              if v.policy in given_names and v.field != "nodeSelector"]
        entry["contested"] = [v.to_json() for v in verdicts_here if v.result == TAKEN]
        entry["resources"] = resource_changes(snap.device_plugin.get(outcome.name),
                                              after.device_plugin.get(outcome.name))
        entry["devicePluginConfig"] = after.device_plugin.get(outcome.name, "")
        nodes.append(entry)
    pools = _pools(snap, nodes)
    disruptive = any(n["disruption"] != "none" for n in nodes)
    exit_code = EXIT_DENIED if not allowed else EXIT_DISRUPTIVE if disruptive else EXIT_OK
    denied = [v for v in verdicts if not v.allowed]
    return {
        "namespace": snap.namespace,
        "changes": [{"policy": v.policy, "operation": v.operation.lower(), "allowed": v.allowed} for v in verdicts],
        "admission": {"allowed": allowed, "message": "; ".join(v.message for v in denied),
                      "warnings": [w for v in verdicts for w in v.warnings],
                      "policies": [v.__dict__ for v in verdicts]},
        "nodes": nodes,
        "pools": pools,
        "errors": after.errors,
        "staleNodeStates": after.stale,
        "notes": notes,
        "exitCode": exit_code,
    }


def _pools(snap: Snapshot, nodes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    by_name = {n["metadata"]["name"]: n for n in snap.nodes}
    pools: dict[str, dict[str, Any]] = {}
    for entry in nodes:
        node = by_name[entry["name"]]
        try:
            pool = find_node_pool(node, snap.pools, snap.nodes)
            limit = pool.limit()
        except (PoolLookupError, ValueError) as exc:
            entry["poolError"] = f"the drain controller will not drain this node: {exc}"
            continue
        entry["pool"] = pool.name
        row = pools.setdefault(pool.name, {"name": pool.name, "maxUnavailable": pool.max_unavailable,
                                           "limit": limit, "nodes": len(pool.nodes), "disrupted": []})
        if entry["disruption"] != "none":
            row["disrupted"].append(entry["name"])
    for row in pools.values():
        count, limit = len(row["disrupted"]), row["limit"]
        if count == 0:
            row["atOnce"], row["waves"] = 0, 0
        elif limit < 0:
            row["atOnce"], row["waves"] = count, 1
        elif limit == 0:
            row["atOnce"], row["waves"] = 0, None
            row["blocked"] = "maxUnavailable is 0: no node of this pool may drain, the rollout waits forever"
        else:
            row["atOnce"], row["waves"] = min(count, limit), math.ceil(count / limit)
    return sorted(pools.values(), key=lambda r: str(r["name"]))
