"""Does a policy's nicSelector pick a PF reported in a NodeState's `status.interfaces`?

Pure functions over the JSON dicts, called for every (policy, node, PF) triple by the policy
controller and the webhook, so they avoid allocation where they can.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sriovop.api.v1.pfnames import pf_name_only

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
    if is_empty_selector(selector):
        return False
    assert selector is not None
    vendor = selector.get("vendor")
    if vendor and vendor != iface.get("vendor"):
        return False
    device = selector.get("deviceID")
    if device and device != iface.get("deviceID"):
        return False
    roots = selector.get("rootDevices")
    if roots and iface.get("pciAddress") not in roots:
        return False
    pf_names = selector.get("pfNames")
    if pf_names:
        names = interface_names(iface)
        if not any(pf_name_only(entry) in names for entry in pf_names):
            return False
    net_filter = selector.get("netFilter")
    return not (net_filter and not netfilter_matches(net_filter, str(iface.get("netFilter", ""))))


def selected_interfaces(selector: Mapping[str, Any] | None, node_state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The NodeState's status interfaces the selector matches, in status order."""
    interfaces = ((node_state.get("status") or {}).get("interfaces")) or ()
    return [iface for iface in interfaces if nic_selector_matches(selector, iface)]
