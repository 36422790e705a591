"""How the webhook compares pfNames VF ranges, and why an interface was not selected.

The decisions (does a nicSelector pick this PF, does a nodeSelector pick this node) are the shared
helpers of `sriovop.api.v1`, so the webhook and the policy controller agree; this module adds the
upstream overlap quirk and the explanations that go into denial messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sriovop.api.v1.nicselector import interface_names, netfilter_matches
from sriovop.api.v1.pfnames import parse_pf_name as api_parse_pf_name
from sriovop.policyrules.fields import loose_str

#: The range upstream gives a pfNames entry without `#first-last`.
NO_RANGE = -1


@dataclass(frozen=True, slots=True)
class PfName:
    name: str
    first: int = NO_RANGE
    last: int = NO_RANGE

    @property
    def has_range(self) -> bool:
        return self.first != NO_RANGE


def parse_pf_name(entry: str) -> PfName:
    """`ens1f0` or `ens1f0#2-5` (raises sriovop.api.v1.pfnames.PfNameError)."""
    name, first, last = api_parse_pf_name(entry)
    if first is None or last is None:
        return PfName(name)
    return PfName(name, first, last)


def ranges_overlap(a: PfName, b: PfName) -> bool:
    """Upstream compares the raw bounds, so two entries without ranges (-1..-1) overlap, while an entry
    without a range never overlaps one with a range. Kept as is: users' policies are judged as upstream
    judges them."""
    return not (a.last < b.first or a.first > b.last)


def explain_mismatch(selector: Mapping[str, Any], iface: Mapping[str, Any]) -> str:
    """Why `nic_selector_matches(selector, iface)` is False, for the denial message."""
    vendor = loose_str(selector.get("vendor"))
    if vendor and vendor != iface.get("vendor"):
        return f"selector vendor {vendor} is not the interface vendor {iface.get('vendor')}"
    device = loose_str(selector.get("deviceID"))
    if device and device != iface.get("deviceID"):
        return f"selector deviceID {device} is not the interface device {iface.get('deviceID')}"
    roots = selector.get("rootDevices") or []
    if roots and iface.get("pciAddress") not in roots:
        return f"interface PCI address {iface.get('pciAddress')} is not among rootDevices"
    pf_names = selector.get("pfNames") or []
    if pf_names and not {str(p).split("#", 1)[0] for p in pf_names} & set(interface_names(iface)):
        return f"interface {iface.get('name')} is not among pfNames"
    net_filter = loose_str(selector.get("netFilter"))
    if net_filter and not netfilter_matches(net_filter, loose_str(iface.get("netFilter"))):
        return f"interface netFilter {iface.get('netFilter')!r} does not match {net_filter!r}"
    return "the nicSelector does not select it"
