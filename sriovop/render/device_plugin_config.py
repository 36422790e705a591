"""The `device-plugin-config` ConfigMap: per node, the sriov-network-device-plugin's ResourceConfList.

The device plugin parses this JSON with the Go types upstream pins (sriov-network-device-plugin of
2022-11), and people diff the ConfigMap between operator versions, so the encoding follows Go's
`json.Marshal` of those types exactly, quirks included:
- `{"resourceList":null}` for a node that gets no resource (a nil Go slice);
- each entry is `resourceName`, `excludeTopology` (only when true), `selectors`, and `"SelectorObj":null`
  (an untagged interface field);
- selector keys in struct order: vendors, devices, (drivers, never set), pciAddresses, pfNames, rootDevices,
  linkTypes, then the untagged `IsRdma` and `NeedVhostNet` (always present, capitalised), then
  `vdpaType`; empty lists are omitted;
- HTML characters escaped as `\\u003c` etc., as Go does.

A `deviceType: vfio-pci` policy adds no `drivers` selector, as upstream's createDevicePluginResource/
updateDevicePluginResource no longer do: the VFs are already chosen by vendor, device, pfNames and
rootDevices, and a driver selector would empty a resource that merges a vfio-pci policy for one vendor
with a netdevice policy for another (e.g. Intel VFs on vfio-pci and Mellanox VFs, which DPDK drives
through mlx5_core, under one resource name). Its linkType is still left out (not detectable on vfio-pci).

Policies with the same resourceName merge into one entry (lists unique-appended, IsRdma/NeedVhostNet/
vdpaType from the first policy, excludeTopology from the last).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.nicselector import netfilter_matches
from sriovop.api.v1.selectors import policy_selects_node
from sriovop.api.v1.supportednics import SupportedNics

LINK_TYPE_ETHERNET = "ether"
LINK_TYPE_INFINIBAND = "infiniband"

_SELECTOR_LISTS = ("vendors", "devices", "pciAddresses", "pfNames", "rootDevices", "linkTypes")


class DevicePluginConfigError(ValueError):
    """A policy that cannot be rendered for a node (e.g. netFilter with no reported interfaces)."""


def go_marshal(value: Any) -> str:
    """Compact JSON the way Go's json.Marshal writes it (no spaces, HTML-safe escapes)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _unique_append(lst: list[str], *values: str) -> None:
    for v in values:
        if v not in lst:
            lst.append(v)


def _resolve_pf_names(pf_names: Sequence[str], interfaces: Sequence[Mapping[str, Any]]) -> list[str]:
    """Alternative names become the PF's real name; a `#first-last` suffix is kept."""
    out: list[str] = []
    for entry in pf_names:
        name, sep, rng = str(entry).partition("#")
        for iface in interfaces:
            if name in (iface.get("altNames") or []) and iface.get("name"):
                name = str(iface["name"])
                break
        out.append(name + sep + rng)
    return out


def _add_policy(selectors: dict[str, Any], policy: Mapping[str, Any], nodestate: Mapping[str, Any] | None,
                nics: SupportedNics) -> None:
    spec = policy.get("spec") or {}
    nic = spec.get("nicSelector") or {}
    lists: dict[str, list[str]] = selectors["lists"]
    if nic.get("vendor"):
        _unique_append(lists["vendors"], str(nic["vendor"]))
    if nic.get("deviceID"):
        pf = str(nic["deviceID"])
        device = pf if not spec.get("numVfs") else (nics.vf_device_id(pf) or "")
        if device:
            _unique_append(lists["devices"], device)
    interfaces = ((nodestate or {}).get("status") or {}).get("interfaces") or []
    if nic.get("pfNames"):
        _unique_append(lists["pfNames"], *_resolve_pf_names(nic["pfNames"], interfaces))
    device_type = spec.get("deviceType") or ""
    if device_type != consts.DEVICE_TYPE_VFIO_PCI and spec.get("linkType"):
        link = LINK_TYPE_INFINIBAND if str(spec["linkType"]).lower() == consts.LINK_TYPE_IB else LINK_TYPE_ETHERNET
        _unique_append(lists["linkTypes"], link)
    if nic.get("rootDevices"):
        _unique_append(lists["rootDevices"], *[str(r) for r in nic["rootDevices"]])
    if nic.get("netFilter"):
        if not interfaces:
            name = ((nodestate or {}).get("metadata") or {}).get("name", "")
            raise DevicePluginConfigError(f"node state {name} doesn't contain interfaces data")
        for iface in interfaces:
            if netfilter_matches(str(nic["netFilter"]), str(iface.get("netFilter") or "")):
                _unique_append(lists["pciAddresses"], str(iface.get("pciAddress") or ""))


def resource_list(sorted_policies: Sequence[Mapping[str, Any]], nodestate: Mapping[str, Any] | None,
                  nics: SupportedNics) -> list[dict[str, Any]]:
    """The ResourceConfList entries for one node, from the (priority-sorted) policies selecting it."""
    entries: list[dict[str, Any]] = []
    by_name: dict[str, dict[str, Any]] = {}
    for policy in sorted_policies:
        spec = policy.get("spec") or {}
        name = str(spec.get("resourceName") or "")
        entry = by_name.get(name)
        if entry is None:
            entry = {
                "resourceName": name,
                "excludeTopology": bool(spec.get("excludeTopology")),
                "lists": {k: [] for k in _SELECTOR_LISTS},
                "IsRdma": bool(spec.get("isRdma")),
                "NeedVhostNet": bool(spec.get("needVhostNet")),
                "vdpaType": str(spec.get("vdpaType") or ""),
            }
            by_name[name] = entry
            entries.append(entry)
        else:
            entry["excludeTopology"] = bool(spec.get("excludeTopology"))
        _add_policy(entry, policy, nodestate, nics)
    return entries


def _entry_json(entry: Mapping[str, Any]) -> str:
    selectors: dict[str, Any] = {k: v for k, v in entry["lists"].items() if v}
    selectors["IsRdma"] = entry["IsRdma"]
    selectors["NeedVhostNet"] = entry["NeedVhostNet"]
    if entry["vdpaType"]:
        selectors["vdpaType"] = entry["vdpaType"]
    out: dict[str, Any] = {"resourceName": entry["resourceName"]}
    if entry["excludeTopology"]:
        out["excludeTopology"] = True
    out["selectors"] = selectors
    out["SelectorObj"] = None
    return go_marshal(out)


def resource_conf_list_json(entries: Sequence[Mapping[str, Any]]) -> str:
    """`{"resourceList":[...]}`, or `{"resourceList":null}` when the node gets nothing."""
    if not entries:
        return '{"resourceList":null}'
    return '{"resourceList":[' + ",".join(_entry_json(e) for e in entries) + "]}"


def node_config_json(sorted_policies: Sequence[Mapping[str, Any]], node: Mapping[str, Any],
                     nodestate: Mapping[str, Any] | None, nics: SupportedNics) -> tuple[str, bool]:
    """(the node's data value, whether its resource list is non-empty → device-plugin label Enabled)."""
    selecting = [p for p in sorted_policies if policy_selects_node(p, node)]
    entries = resource_list(selecting, nodestate, nics)
    return resource_conf_list_json(entries), bool(entries)
