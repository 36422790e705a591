"""CNI results in the version the configuration asked for (1.0.0, or 0.3.0/0.3.1/0.4.0 for Multus).

The IPAM plugin answers in the configuration's version too; its IPs are normalised here so the
interface index and, before 1.0.0, the `version` field are right whatever it sent.
"""

from __future__ import annotations

import ipaddress
from typing import Any


def build(cni_version: str, interface: dict[str, Any], ipam: dict[str, Any] | None) -> dict[str, Any]:
    result: dict[str, Any] = {"cniVersion": cni_version, "interfaces": [interface]}
    if ipam:
        ips = []
        for ip in ipam.get("ips") or []:
            entry = {k: v for k, v in ip.items() if k in ("address", "gateway")}
            entry["interface"] = 0
            if cni_version != "1.0.0":
                entry["version"] = str(ipaddress.ip_interface(entry["address"]).version)
            ips.append(entry)
        result["ips"] = ips
        if ipam.get("routes"):
            result["routes"] = ipam["routes"]
        if ipam.get("dns"):
            result["dns"] = ipam["dns"]
    return result


def interface(ifname: str, mac: str, sandbox: str, pci: str, cni_version: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": ifname, "mac": mac, "sandbox": sandbox}
    if cni_version == "1.0.0":
        entry["pciID"] = pci  # CNI spec 1.1's field; runtimes reading 1.0.0 ignore it
    return entry
