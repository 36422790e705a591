"""Which nodes and which NICs a policy selects, and how `pfNames` VF ranges compare.

Private to the webhook until the shared helpers land in `sriovop.api.v1`; the semantics are upstream's,
quirks included (see `ranges_overlap`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sriovop.webhook.fields import loose_str

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


class PfNameError(ValueError):
    pass


def _atoi(text: str) -> int:
    """Go's strconv.Atoi: optional sign then ASCII digits only (Python's int() accepts more)."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not digits.isascii() or not digits.isdigit():
        raise ValueError(text)
    return int(text)


def parse_pf_name(entry: str) -> PfName:
    """`ens1f0` or `ens1f0#2-5`; raises PfNameError with upstream's wording."""
    if "#" not in entry:
        return PfName(entry)
    fields = entry.split("#")
    if len(fields) != 2:
        raise PfNameError(
            f"failed to parse {entry} PF name in nicSelector, probably incorrect separator character usage"
        )
    bounds = fields[1].split("-")
    if len(bounds) != 2:
        raise PfNameError(f"failed to parse {entry} PF name nicSelector, probably incorrect range character usage")
    try:
        first = _atoi(bounds[0])
    except ValueError:
        raise PfNameError(f"failed to parse {entry} PF name nicSelector, start range is incorrect") from None
    try:
        last = _atoi(bounds[1])
    except ValueError:
        raise PfNameError(f"failed to parse {entry} PF name nicSelector, end range is incorrect") from None
    if last < first:
        raise PfNameError(
            f"failed to parse {entry} PF name nicSelector, end range shall not be smaller than start range"
        )
    return PfName(fields[0], first, last)


def ranges_overlap(a: PfName, b: PfName) -> bool:
    """Upstream compares the raw bounds, so two entries without ranges (-1..-1) overlap, while an entry
    without a range never overlaps one with a range. Kept as is: users' policies are judged as upstream
    judges them."""
    return not (a.last < b.first or a.first > b.last)


def node_selected(node_selector: Mapping[str, str], labels: Mapping[str, Any]) -> bool:
    """Plain equality on every key, as upstream's `Selected` (an empty selector selects every node)."""
    return all(labels.get(k) == v for k, v in node_selector.items())


def net_filter_match(selector_filter: str, iface_filter: str) -> bool:
    """`openstack/NetworkID:<uuid>`: both sides split at the first ':' and both parts compared."""
    s_kind, _, s_value = selector_filter.partition(":")
    i_kind, _, i_value = iface_filter.partition(":")
    return s_kind == i_kind and s_value == i_value


def iface_names(iface: Mapping[str, Any]) -> set[str]:
    names = {loose_str(iface.get("name"))}
    alt = iface.get("altNames")
    if isinstance(alt, list):
        names.update(a for a in alt if isinstance(a, str))
    names.discard("")
    return names


def nic_selector_mismatch(selector: Mapping[str, Any], iface: Mapping[str, Any]) -> str | None:
    """None when `iface` (a NodeState status interface) satisfies every set field of the nicSelector,
    else the first reason it does not."""
    vendor = loose_str(selector.get("vendor"))
    if vendor and vendor.lower() != loose_str(iface.get("vendor")).lower():
        return f"selector vendor {vendor} is not the interface vendor {iface.get('vendor')}"
    device = loose_str(selector.get("deviceID"))
    if device and device.lower() != loose_str(iface.get("deviceID")).lower():
        return f"selector deviceID {device} is not the interface device {iface.get('deviceID')}"
    roots = selector.get("rootDevices") or []
    if roots and loose_str(iface.get("pciAddress")) not in roots:
        return f"interface PCI address {iface.get('pciAddress')} is not among rootDevices"
    pf_names = selector.get("pfNames") or []
    if pf_names:
        wanted = {str(p).split("#", 1)[0] for p in pf_names}
        if not wanted & iface_names(iface):
            return f"interface {iface.get('name')} is not among pfNames"
    net_filter = loose_str(selector.get("netFilter"))
    if net_filter and not net_filter_match(net_filter, loose_str(iface.get("netFilter"))):
        return f"interface netFilter {iface.get('netFilter')!r} does not match {net_filter!r}"
    return None


def canonical_pf_name(name: str, interfaces: Iterable[Mapping[str, Any]]) -> str:
    """Resolve an alternative name to the PF's real name using a NodeState's interfaces."""
    for iface in interfaces:
        if name in iface_names(iface):
            return loose_str(iface.get("name")) or name
    return name
