"""For one node: every (policy, PF) pair, selected or not, and why.

The answers come from the code that decides: the node selector and nicSelector helpers of
`sriovop.api.v1` (what the operator's merge uses), the webhook's reasons for an unselected or refused
interface, and the merged NodeState spec itself (whose VF groups name the policy that won them). A
policy that selects a PF but has no VF group on it in the merged spec lost it to a policy applied
after it (a lower priority number, or the same priority and a later name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sriovop.api.v1.pfnames import PfNameError, parse_vf_range
from sriovop.api.v1.policydefaults import policy_priority
from sriovop.api.v1.selectors import policy_selects_node
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.controllers.node_policy_apply import PolicyError, vf_group, vf_ranges_overlap
from sriovop.jsonstyle import camel
from sriovop.policyrules.denied import Denied
from sriovop.policyrules.dynamic import check_interface, interface_unselected_reason
from sriovop.policyrules.spec import parse_policy_leniently

Obj = Mapping[str, Any]

SELECTED = "selected"
NOT_SELECTED = "not-selected"
TAKEN = "taken"


@dataclass(frozen=True)
class PfVerdict:
    policy: str
    priority: int
    pf: str
    pci_address: str
    result: str  # selected | not-selected | taken
    reason: str
    #: The selector field that did not match (vendor, deviceID, pfNames, rootDevices, netFilter,
    #: nodeSelector, model, numVfs, externallyManaged) or `priority` when another policy won the PF.
    field: str = ""
    vf_range: str = ""
    winner: str = ""

    def to_json(self) -> dict[str, Any]:
        return {camel(k): v for k, v in asdict(self).items() if v not in ("", None)}


_MISMATCH_FIELDS = (("selector vendor", "vendor"), ("selector deviceID", "deviceID"),
                    ("among rootDevices", "rootDevices"), ("among pfNames", "pfNames"),
                    ("netFilter", "netFilter"), ("not in the supported NIC list", "model"))


def _field_of(reason: str) -> str:
    return next((f for marker, f in _MISMATCH_FIELDS if marker in reason), "nicSelector")


def _groups_on(spec_iface: Obj | None) -> list[Obj]:
    return list((spec_iface or {}).get("vfGroups") or [])


def _why_taken(loser: Obj, winner: Obj, group: Obj, mine: Obj | None) -> str:
    lp, wp = policy_priority(loser), policy_priority(winner)
    lname, wname = loser["metadata"]["name"], winner["metadata"]["name"]
    if wp < lp:
        order = f"priority {wp} of {wname} beats priority {lp}"
    else:
        order = f"same priority {wp}; {wname} sorts after {lname} by name and is applied last"
    clash = "same resourceName " + str(group.get("resourceName"))
    if mine is not None and group.get("resourceName") != mine.get("resourceName"):
        clash = f"VF range {group.get('vfRange')} overlaps {mine.get('vfRange')}"
    return f"taken by {wname} ({order}; {clash})"


def _my_group(policy: Obj, iface: Obj) -> dict[str, Any] | None:
    try:
        return vf_group(policy, iface)
    except PolicyError:
        return None


def node_verdicts(sorted_policies: Sequence[Obj], node: Obj, status_interfaces: Sequence[Obj],
                  spec_interfaces: Sequence[Obj], nics: SupportedNics, dev_mode: bool = False) -> list[PfVerdict]:
    """One verdict per (policy, PF of the node), policies in the order the operator applies them."""
    by_pci = {str(i.get("pciAddress")): i for i in spec_interfaces}
    by_policy = {p["metadata"]["name"]: p for p in sorted_policies}
    node_name = node["metadata"]["name"]
    out: list[PfVerdict] = []
    for policy in sorted_policies:
        name = policy["metadata"]["name"]
        prio = policy_priority(policy)
        spec = policy.get("spec") or {}
        parsed = parse_policy_leniently(dict(policy))
        for iface in status_interfaces:
            pf, pci = str(iface.get("name") or ""), str(iface.get("pciAddress") or "")

            def verdict(result: str, reason: str, field: str = "", vf_range: str = "", winner: str = "",
                        _n: str = name, _p: int = prio, _pf: str = pf, _pci: str = pci) -> PfVerdict:
                return PfVerdict(_n, _p, _pf, _pci, result, reason, field, vf_range, winner)

            if not policy_selects_node(policy, node):
                out.append(verdict(NOT_SELECTED, f"nodeSelector {dict(spec.get('nodeSelector') or {})} does not "
                                   f"match node {node_name} labels", "nodeSelector"))
                continue
            if parsed is None:
                out.append(verdict(NOT_SELECTED, "the policy spec cannot be read", "spec"))
                continue
            why = interface_unselected_reason(parsed, iface, node, nics, dev_mode)
            if why is not None:
                out.append(verdict(NOT_SELECTED, why, _field_of(why)))
                continue
            if int(spec.get("numVfs") or 0) <= 0:
                out.append(verdict(NOT_SELECTED, "numVfs is 0: the policy contributes nothing", "numVfs"))
                continue
            try:
                check_interface(parsed, iface, node_name)
            except Denied as denied:
                out.append(verdict(NOT_SELECTED, denied.reason, denied.field.removeprefix("spec.")))
                continue
            groups = _groups_on(by_pci.get(pci))
            mine = next((g for g in groups if g.get("policyName") == name), None)
            if mine is not None:
                out.append(verdict(SELECTED, f"VFs {mine.get('vfRange')} as {mine.get('resourceName')}",
                                   vf_range=str(mine.get("vfRange") or "")))
                continue
            wanted = _my_group(policy, iface)
            rivals = [g for g in groups if g.get("policyName") in by_policy and g.get("policyName") != name]
            clash = next((g for g in rivals if wanted is None or g.get("resourceName") == wanted.get("resourceName")
                          or _overlap(g, wanted)), rivals[0] if rivals else None)
            if clash is None:
                out.append(verdict(NOT_SELECTED, "no VF group of this policy is in the merged spec", "nicSelector"))
                continue
            winner = by_policy[str(clash.get("policyName"))]
            out.append(verdict(TAKEN, _why_taken(policy, winner, clash, wanted), "priority",
                               winner=winner["metadata"]["name"]))
    return out


def _overlap(group: Obj, wanted: Obj | None) -> bool:
    if wanted is None:
        return False
    try:
        parse_vf_range(str(wanted.get("vfRange")))
    except PfNameError:
        return False
    return vf_ranges_overlap(str(group.get("vfRange") or ""), str(wanted.get("vfRange") or ""))

