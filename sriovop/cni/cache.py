"""The state a `sriov` ADD leaves for its DEL, in upstream sriov-cni's format.

`<state>/sriov/<containerID>-<ifName>` (0600) holds the whole network configuration plus what ADD
found and did: `OrigVfState` (the VF as it was: host name, admin and effective MAC, VLAN/QoS/proto,
spoofchk, trust, rates, link state, MTU), `Master` (PF), `VFID`, `MAC`. Key names and value types are
upstream's (Go field names, VlanProto as the ethertype, LinkState as IFLA_VF_LINK_STATE), so upstream's
DEL can undo our ADD and ours can undo theirs. `DPDKMode` is ours: upstream does not persist it and
at DEL cannot tell a vfio-pci VF from a vanished netdev; upstream ignores the extra key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sriovop.cni.vfkernel import LINK_STATE_NAMES, LINK_STATE_VALUES, PROTO_NAMES, PROTO_VALUES, VfConfig


@dataclass
class OrigVfState:
    """The VF before ADD touched it (upstream's VfState)."""

    host_ifname: str
    config: VfConfig
    effective_mac: str = ""
    mtu: int = 0

    def to_json(self) -> dict[str, Any]:
        c = self.config
        return {"HostIFName": self.host_ifname, "SpoofChk": c.spoofchk, "Trust": c.trust, "AdminMAC": c.admin_mac,
                "EffectiveMAC": self.effective_mac, "Vlan": c.vlan, "VlanQoS": c.vlan_qos,
                "VlanProto": PROTO_VALUES.get(c.vlan_proto, 0x8100), "MinTxRate": c.min_tx_rate,
                "MaxTxRate": c.max_tx_rate, "LinkState": LINK_STATE_VALUES.get(c.link_state, 0), "MTU": self.mtu}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> OrigVfState:
        proto = int(raw.get("VlanProto") or 0x8100)
        config = VfConfig(
            admin_mac=str(raw.get("AdminMAC") or "00:00:00:00:00:00").lower(), vlan=int(raw.get("Vlan") or 0),
            vlan_qos=int(raw.get("VlanQoS") or 0), vlan_proto=PROTO_NAMES.get(proto, "802.1q"),
            spoofchk=bool(raw.get("SpoofChk", True)), trust=bool(raw.get("Trust", False)),
            link_state=LINK_STATE_NAMES.get(int(raw.get("LinkState") or 0), "auto"),
            min_tx_rate=int(raw.get("MinTxRate") or 0), max_tx_rate=int(raw.get("MaxTxRate") or 0))
        return cls(host_ifname=str(raw.get("HostIFName") or ""), config=config,
                   effective_mac=str(raw.get("EffectiveMAC") or "").lower(), mtu=int(raw.get("MTU") or 0))


@dataclass
class CachedAdd:
    """What DEL needs: the configuration as given, and what ADD found and did."""

    netconf: dict[str, Any]
    orig: OrigVfState
    master: str
    vf_index: int
    mac: str = ""
    dpdk_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        return {**self.netconf, "OrigVfState": self.orig.to_json(), "Master": self.master, "VFID": self.vf_index,
                "MAC": self.mac, "MTU": None, "DPDKMode": self.dpdk_mode}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> CachedAdd:
        netconf = {k: v for k, v in raw.items()
                   if k not in ("OrigVfState", "Master", "VFID", "MAC", "MTU", "DPDKMode")}
        return cls(netconf=netconf, orig=OrigVfState.from_json(dict(raw.get("OrigVfState") or {})),
                   master=str(raw.get("Master") or ""), vf_index=int(raw.get("VFID") or 0),
                   mac=str(raw.get("MAC") or "").lower(), dpdk_mode=bool(raw.get("DPDKMode", False)))


class Cache:
    """One directory of cache files (`<state>/sriov` or `<state>/ib-sriov`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def path(self, container_id: str, ifname: str) -> Path:
        return self.directory / f"{container_id}-{ifname}"

    def save(self, container_id: str, ifname: str, data: dict[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        final = self.path(container_id, ifname)
        tmp = final.with_name(f".{final.name}.tmp")
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, json.dumps(data).encode())
        finally:
            os.close(fd)
        os.replace(tmp, final)

    def load(self, container_id: str, ifname: str) -> dict[str, Any] | None:
        try:
            raw = json.loads(self.path(container_id, ifname).read_bytes())
        except FileNotFoundError:
            return None
        return dict(raw) if isinstance(raw, dict) else None

    def remove(self, container_id: str, ifname: str) -> None:
        try:
            self.path(container_id, ifname).unlink()
        except FileNotFoundError:
            pass
