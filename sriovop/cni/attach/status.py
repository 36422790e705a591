"""The pod annotation `k8s.v1.cni.cncf.io/network-status`, rendered as Multus renders it.

Each CNI result becomes one entry per pod-side interface (an interface with a `sandbox`), keys in the
upstream order `name, interface, ips, mac, mtu, default, dns, device-info, gateway`, empty values left
out except `dns` (always present, `{}` when empty). The annotation is `[` + the entries, each indented
by four spaces, joined by `,` + `]`, byte-for-byte what tools that parse Multus's output expect.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

ANNOTATION: Final = "k8s.v1.cni.cncf.io/network-status"


def _ip(address: str) -> str:
    return str(ipaddress.ip_interface(address).ip) if "/" in address else address


def _dns(dns: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(dns, Mapping):
        for key in ("nameservers", "domain", "search", "options"):
            if dns.get(key):
                out[key] = dns[key]
    return out


def _gateways(result: Mapping[str, Any]) -> list[str]:
    """Gateways of default routes (upstream counts any destination whose address is 0.0.0.0 or ::)."""
    out = []
    for route in result.get("routes") or []:
        dst = str(route.get("dst", ""))
        if route.get("gw") and (not dst or ipaddress.ip_network(dst, strict=False).network_address.is_unspecified):
            out.append(str(route["gw"]))
    return out


def _entry(name: str, interface: Mapping[str, Any] | None, ips: list[str], default: bool, dns: dict[str, Any],
           device_info: Mapping[str, Any] | None, gateway: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    if interface is not None and interface.get("name"):
        entry["interface"] = interface["name"]
    if ips:
        entry["ips"] = ips
    if interface is not None and interface.get("mac"):
        entry["mac"] = interface["mac"]
    if interface is not None and interface.get("mtu"):
        entry["mtu"] = interface["mtu"]
    if default:
        entry["default"] = True
    entry["dns"] = dns
    if device_info:
        entry["device-info"] = dict(device_info)
    if gateway:
        entry["gateway"] = gateway
    return entry


def entries(result: Mapping[str, Any], name: str, default: bool,
            device_info: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The network-status entries of one network's ADD result."""
    interfaces = [i for i in result.get("interfaces") or [] if isinstance(i, Mapping)]
    ip_configs = [c for c in result.get("ips") or [] if isinstance(c, Mapping) and c.get("address")]
    gateway, dns = _gateways(result), _dns(result.get("dns"))
    if len(interfaces) == 1:
        sandboxed = interfaces[0] if interfaces[0].get("sandbox") else None
        return [_entry(name, sandboxed, [_ip(c["address"]) for c in ip_configs], default, dns, device_info, gateway)]
    # several interfaces: one entry per sandbox interface; the default one is the first that owns a
    # gateway address, else the first sandbox interface; addresses go to their interface (or the last)
    gw_index = -1
    if default:
        gw_index = next((int(c["interface"]) for c in ip_configs
                         if c.get("gateway") and isinstance(c.get("interface"), int)), -1)
    out: list[dict[str, Any]] = []
    position: dict[int, int] = {}
    for index, iface in enumerate(interfaces):
        if not iface.get("sandbox"):
            continue
        is_default = default and (index == gw_index if gw_index >= 0 else not out)
        position[index] = len(out)
        out.append(_entry(name, iface, [], is_default, dns, device_info, gateway))
    for config in ip_configs:
        where = config.get("interface")
        target = position.get(where) if isinstance(where, int) else (len(out) - 1 if out else None)
        if target is not None:
            out[target].setdefault("ips", []).append(_ip(config["address"]))
    return [_reordered(e) for e in out]


def _reordered(entry: dict[str, Any]) -> dict[str, Any]:
    order = ("name", "interface", "ips", "mac", "mtu", "default", "dns", "device-info", "gateway")
    return {k: entry[k] for k in order if k in entry}


def render(statuses: Sequence[Mapping[str, Any]]) -> str:
    return "[" + ",".join(json.dumps(s, indent=4, ensure_ascii=False) for s in statuses) + "]"
