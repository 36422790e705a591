"""Upstream's policy `Apply`: how the policies selecting a node become its NodeState spec.

Pure functions over plain JSON dicts, kept bug-for-bug with upstream because users' clusters already
depend on the result (e.g. a policy with numVfs 0 contributes nothing; equal-priority or partitioned
policies on one PF keep the larger MTU and numVfs; the VF-range overlap test is upstream's, which
compares a range's ends only).

Selection and pfNames parsing come from `sriovop.api.v1`; only the merge itself lives here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.nicselector import interface_names, is_empty_selector, nic_selector_matches
from sriovop.api.v1.pfnames import PfNameError, index_in_range, parse_pf_name, parse_vf_range
from sriovop.api.v1.policydefaults import policy_priority
from sriovop.api.v1.selectors import policy_selects_node


class PolicyError(ValueError):
    """A policy that cannot be applied (a malformed pfNames range); the message names the policy."""

    def __init__(self, message: str, policy_name: str = "") -> None:
        super().__init__(message)
        self.policy_name = policy_name


def sort_policies(policies: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Upstream's ByPriority: priority number descending, then name ascending, so that the most
    important policy (priority 0) is applied last and wins. The deprecated `default` policy is dropped."""
    kept = [p for p in policies if p["metadata"]["name"] != consts.DEFAULT_POLICY_NAME]
    return sorted(kept, key=lambda p: (-policy_priority(p), p["metadata"]["name"]))


def vf_ranges_overlap(existing: str, new: str) -> bool:
    """Upstream's isVFRangeOverlapping: only the ends of one range are tested against the other."""
    try:
        s1, _ = parse_vf_range(existing)
        s2, e2 = parse_vf_range(new)
    except PfNameError:
        return False
    if s1 < s2:
        return index_in_range(s2, existing) or index_in_range(e2, existing)
    _, e1 = parse_vf_range(existing)
    return index_in_range(s1, new) or index_in_range(e1, new)


def _omit_empty(d: dict[str, Any]) -> dict[str, Any]:
    """Go's `omitempty`: what the server would store for the Go struct (zero values are absent)."""
    return {k: v for k, v in d.items() if v not in (None, "", 0, False, [], {})}


def vf_group(policy: Mapping[str, Any], iface: Mapping[str, Any]) -> dict[str, Any]:
    spec = policy.get("spec") or {}
    num_vfs = int(spec.get("numVfs") or 0)
    first, last = 0, num_vfs - 1
    names = interface_names(iface)
    for entry in (spec.get("nicSelector") or {}).get("pfNames") or []:
        try:
            name, r_first, r_last = parse_pf_name(str(entry))
        except PfNameError as exc:
            raise PolicyError(
                f"SriovNetworkNodePolicy {policy['metadata']['name']}: spec.nicSelector.pfNames entry "
                f"{entry!r}: {exc}", policy["metadata"]["name"]
            ) from None
        if name in names:
            if r_first is not None and r_last is not None:
                first, last = r_first, r_last
            break
    group = {
        "resourceName": spec.get("resourceName", ""),
        "deviceType": spec.get("deviceType") or "",
        "vfRange": f"{first}-{last}",
        "policyName": policy["metadata"]["name"],
        "mtu": spec.get("mtu") or 0,
        "isRdma": bool(spec.get("isRdma")),
        "vdpaType": spec.get("vdpaType") or "",
    }
    out = _omit_empty(group)
    out["vfRange"] = group["vfRange"]
    return out


def _merge(existing: Mapping[str, Any], new: dict[str, Any], equal_priority: bool) -> None:
    """Keep the existing groups with another resource name and no overlap; when any were kept or the
    priorities are equal, keep the larger mtu and numVfs."""
    head = new["vfGroups"][0]
    kept = False
    for group in existing.get("vfGroups") or []:
        if group.get("resourceName") == head.get("resourceName") or vf_ranges_overlap(
            str(group.get("vfRange") or ""), str(head.get("vfRange") or "")
        ):
            continue
        kept = True
        new["vfGroups"].append(dict(group))
    if not equal_priority and not kept:
        return
    for field in ("mtu", "numVfs"):
        if int(new.get(field) or 0) < int(existing.get(field) or 0):
            new[field] = existing[field]


def apply_policy(policy: Mapping[str, Any], status_interfaces: Sequence[Mapping[str, Any]],
                 spec_interfaces: list[dict[str, Any]], equal_priority: bool) -> None:
    """Apply one policy onto `spec_interfaces` in place (upstream's SriovNetworkNodePolicy.Apply)."""
    spec = policy.get("spec") or {}
    selector = spec.get("nicSelector") or {}
    if is_empty_selector(selector):
        return
    num_vfs = int(spec.get("numVfs") or 0)
    for iface in status_interfaces:
        if num_vfs <= 0 or not nic_selector_matches(selector, iface):
            continue
        result = _omit_empty({
            "pciAddress": iface.get("pciAddress", ""),
            "numVfs": num_vfs,
            "mtu": spec.get("mtu") or 0,
            "name": iface.get("name") or "",
            "linkType": spec.get("linkType") or "",
            "eSwitchMode": spec.get("eSwitchMode") or "",
            "externallyManaged": bool(spec.get("externallyManaged")),
        })
        result["pciAddress"] = iface.get("pciAddress", "")
        result["vfGroups"] = [vf_group(policy, iface)]
        for i, existing in enumerate(spec_interfaces):
            if existing.get("pciAddress") == result["pciAddress"]:
                _merge(existing, result, equal_priority)
                spec_interfaces[i] = result
                break
        else:
            spec_interfaces.append(result)


def desired_interfaces(sorted_policies: Sequence[Mapping[str, Any]], node: Mapping[str, Any],
                       status_interfaces: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The NodeState `spec.interfaces` the sorted policies produce for this node."""
    out: list[dict[str, Any]] = []
    last_priority = consts.POLICY_APPLY_INITIAL_PRIORITY
    for policy in sorted_policies:
        if not policy_selects_node(policy, node):
            continue
        prio = policy_priority(policy)
        apply_policy(policy, status_interfaces, out, prio == last_priority)
        last_priority = prio
    return out


def bridge_name(pci_address: str) -> str:
    """`br-<pci with ':' replaced by '_'>`, e.g. `br-0000_00_03.0`."""
    return "br-" + pci_address.replace(":", "_")


def apply_bridge_config(policy: Mapping[str, Any], status_interfaces: Sequence[Mapping[str, Any]],
                        bridges: list[dict[str, Any]]) -> None:
    """Upstream's ApplyBridgeConfig (feature gate manageSoftwareBridges), in place on `bridges.ovs`.

    A selecting policy with `bridge.ovs` (re)defines one bridge per selected PF, with that PF as its only
    uplink; a selecting policy without it removes the bridges whose uplink is that PF. The list stays
    sorted by bridge name.
    """
    spec = policy.get("spec") or {}
    selector = spec.get("nicSelector") or {}
    if is_empty_selector(selector):
        return
    ovs = (spec.get("bridge") or {}).get("ovs")
    name = policy["metadata"]["name"]
    for iface in status_interfaces:
        if not nic_selector_matches(selector, iface):
            continue
        pci = str(iface.get("pciAddress") or "")
        if ovs is None:
            bridges[:] = [b for b in bridges
                          if not any(u.get("pciAddress") == pci for u in b.get("uplinks") or [])]
            continue
        if spec.get("eSwitchMode") != consts.ESWITCH_MODE_SWITCHDEV:
            raise PolicyError(f"SriovNetworkNodePolicy {name}: spec.bridge is only allowed with "
                              "spec.eSwitchMode switchdev", name)
        if spec.get("linkType") and str(spec["linkType"]).lower() != consts.LINK_TYPE_ETH:
            raise PolicyError(f"SriovNetworkNodePolicy {name}: spec.bridge needs spec.linkType eth", name)
        if spec.get("externallyManaged"):
            raise PolicyError(f"SriovNetworkNodePolicy {name}: spec.bridge cannot be used with "
                              "spec.externallyManaged", name)
        interface = dict((ovs.get("uplink") or {}).get("interface") or {})
        if spec.get("mtu"):
            interface["mtuRequest"] = spec["mtu"]
        uplink: dict[str, Any] = {"pciAddress": pci, "name": iface.get("name") or ""}
        if interface:
            uplink["interface"] = interface
        entry: dict[str, Any] = {"name": bridge_name(pci), "uplinks": [uplink]}
        if ovs.get("bridge"):
            entry["bridge"] = dict(ovs["bridge"])
        bridges[:] = [b for b in bridges if b.get("name") != entry["name"]]
        bridges.append(entry)
        bridges.sort(key=lambda b: str(b.get("name")))


def desired_bridges(sorted_policies: Sequence[Mapping[str, Any]], node: Mapping[str, Any],
                    status_interfaces: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for policy in sorted_policies:
        if policy_selects_node(policy, node):
            apply_bridge_config(policy, status_interfaces, out)
    return out
