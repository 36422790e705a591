"""Does a policy's nicSelector pick a PF reported in a NodeState's `status.interfaces`?

Pure functions over the JSON dicts, called for every (policy, node, PF) triple by the policy
controller and the webhook, so they avoid allocation where they can.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SELECTOR_FIELDS = ("vendor", "deviceID", "pfNames", "rootDevices", "netFilter")


def is_empty_selector(selector: Mapping[str, Any] | None) -> bool:
    """True when no selection field is set; such a selector matches nothing (and the webhook rejects it)."""
    return not selector or not any(selector.get(f) for f in SELECTOR_FIELDS)


def _split_netfilter(text: str) -> tuple[str, str] | None:
    head, sep, tail = text.partition(":")
    head, tail = head.strip(), tail.strip()
    if not sep or not head or not tail:
        return None
    return head, tail


def netfilter_matches(net_filter: str, value: str) -> bool:
    """`openstack/NetworkID:<uuid>` against an interface's `netFilter`: both halves around the first ':' equal."""
    want = _split_netfilter(net_filter)
    have = _split_netfilter(value or "")
    return want is not None and want == have


def interface_names(iface: Mapping[str, Any]) -> list[str]:
    """A PF's netdev name followed by its alternative names (both are accepted by pfNames)."""
    names = [iface["name"]] if iface.get("name") else []
    names.extend(iface.get("altNames") or ())
    return names


def nic_selector_matches(selector: Mapping[str, Any] | None, iface: Mapping[str, Any]) -> bool:
    """Whether `selector` (policy `spec.nicSelector`) selects `iface` (a NodeState `status.interfaces[]` item).

    Set fields are ANDed: vendor and deviceID (PF id) compare exactly (the device plugin compares them
    exactly too, so matching "15B3" here would only defer the failure), rootDevices lists PCI
    addresses, pfNames entries (range suffix ignored) match the name or an alt name, netFilter
    compares both halves around ':'. An empty selector matches nothing.
    """
    if not selector:
        return False
    vendor = selector.get("vendor")
    device = selector.get("deviceID")
    roots = selector.get("rootDevices")
    pf_names = selector.get("pfNames")
    net_filter = selector.get("netFilter")
    if not (vendor or device or roots or pf_names or net_filter):
        return False
    if vendor and vendor != iface.get("vendor"):
        return False
    if device and device != iface.get("deviceID"):
        return False
    if roots and iface.get("pciAddress") not in roots:
        return False
    if pf_names and not _pf_names_match(pf_names, iface):
        return False
    return not (net_filter and not netfilter_matches(net_filter, str(iface.get("netFilter", ""))))


def _pf_names_match(pf_names: Any, iface: Mapping[str, Any]) -> bool:
    name = iface.get("name")
    alt = iface.get("altNames") or ()
    for entry in pf_names:
        wanted = entry.partition("#")[0]
        if wanted and (wanted == name or wanted in alt):
            return True
    return False


def selected_interfaces(selector: Mapping[str, Any] | None, node_state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The NodeState's status interfaces the selector matches, in status order."""
    interfaces = ((node_state.get("status") or {}).get("interfaces")) or ()
    return [iface for iface in interfaces if nic_selector_matches(selector, iface)]
