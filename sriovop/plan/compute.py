"""`sriovop plan`: what applying (or deleting) some policies would do, computed with the deciding code.

- admission (`sriovop.plan.admission`): the API server's schema and defaults, then the shared policy
  rules, which deny only when a validating webhook enforces them and are warnings otherwise;
- NodeState specs and the device-plugin ConfigMap: `node_policy_desired.sync_outcome`, the functions
  the operator's sync writes with, before and after the change;
- disruption: `host.decision.decide_node`, the daemon's own drain/reboot decision (its plugins' rules:
  generic with OVS bridges, Mellanox firmware, virtual platform), fed with the host facts the daemon
  publishes on its NodeState;
- pools: `pool_config.PoolMembership` and its `maxUnavailable` limit, as the drain controller counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from sriovop.api.v1 import consts
from sriovop.controllers.drain.states import is_full_drain
from sriovop.controllers.node_policy_desired import normalized, status_interfaces, sync_outcome
from sriovop.controllers.pool_config import PoolLookupError, PoolMembership
from sriovop.host.decision import HOST_FACTS_ANNOTATION, HostFacts, decide_node
from sriovop.host.errors import HostError
from sriovop.plan.admission import admit
from sriovop.plan.pfs import pf_rows, pf_warnings
from sriovop.plan.resources import resource_changes, resource_users
from sriovop.plan.selection import TAKEN, node_verdicts
from sriovop.plan.snapshot import Snapshot, pod_resources

Obj = Mapping[str, Any]

EXIT_OK = 0
EXIT_DENIED = 1
EXIT_DISRUPTIVE = 2


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


def compute_plan(snap: Snapshot, given: Sequence[Obj], delete: bool = False) -> dict[str, Any]:
    verdicts, final = admit(snap, given, delete)
    allowed = all(v.allowed for v in verdicts)
    after = sync_outcome(snap.config, final, snap.nodes, snap.states, snap.pools, snap.nics)
    given_names = {p["metadata"]["name"] for p in given}
    notes = list(snap.notes)
    mode = _admission_mode(snap)
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
        entry["pfs"] = pf_rows(outcome)
        entry["warnings"] = pf_warnings(entry["pfs"])
        verdicts_here = node_verdicts(after.policies, outcome.node, status_interfaces(state),
                                      entry["spec"]["interfaces"], snap.nics)
        entry["selection"] = [v.to_json() for v in verdicts_here
                              if v.policy in given_names and v.field != "nodeSelector"]
        entry["contested"] = [v.to_json() for v in verdicts_here if v.result == TAKEN]
        entry["resources"] = resource_changes(
            snap.device_plugin.get(outcome.name), after.device_plugin.get(outcome.name),
            current.get("interfaces") or [], entry["spec"]["interfaces"], outcome.node, snap.resource_prefix)
        for row in entry["resources"]["removed"]:
            row.update(resource_users(row["resourceName"], outcome.name, snap.networks, snap.pods, pod_resources,
                                      snap.resource_prefix))
            if row["networks"] or row["pods"]:
                entry["warnings"].append(
                    f"resource {snap.resource_prefix}/{row['resourceName']} vanishes from this node; still used by "
                    + "; ".join(f"{what} {', '.join(names)}" for what, names in (
                        ("networks", row["networks"]), ("pods", row["pods"])) if names))
        entry["devicePluginConfig"] = after.device_plugin.get(outcome.name, "")
        nodes.append(entry)
    pools = _pools(snap, nodes)
    disruptive = any(n["disruption"] != "none" for n in nodes)
    exit_code = EXIT_DENIED if not allowed else EXIT_DISRUPTIVE if disruptive else EXIT_OK
    denied = [v for v in verdicts if not v.allowed]
    return {
        "namespace": snap.namespace,
        "changes": [{"policy": v.policy, "operation": v.operation, "allowed": v.allowed} for v in verdicts],
        "admission": {"mode": mode, "allowed": allowed, "message": "; ".join(v.message for v in denied),
                      "warnings": [w for v in verdicts for w in v.warnings],
                      "policies": [v.to_json() for v in verdicts],
                      "webhooks": [h.to_json() for h in (snap.webhooks.hooks if snap.webhooks else ())]},
        "nodes": nodes,
        "pools": pools,
        "errors": after.errors,
        "staleNodeStates": after.stale,
        "notes": notes,
        "exitCode": exit_code,
    }


def _admission_mode(snap: Snapshot) -> str:
    """`enforced`: a validating webhook answers for policies and its denials stop a change;
    `refused`: one cannot be reached and its failurePolicy Fail refuses every write; `none`: nothing
    enforces the rules (no webhook, or an unreachable one with failurePolicy Ignore)."""
    if snap.webhooks is not None and snap.webhooks.refuses_writes():
        return "refused"
    return "enforced" if snap.rules_enforced else "none"


def _pools(snap: Snapshot, nodes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    by_name = {n["metadata"]["name"]: n for n in snap.nodes}
    pools: dict[str, dict[str, Any]] = {}
    membership = PoolMembership(snap.pools, snap.nodes)
    for entry in nodes:
        node = by_name[entry["name"]]
        try:
            pool = membership.pool_of(node)
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
