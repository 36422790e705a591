"""Mellanox/NVIDIA NICs: firmware must allow the VFs (SRIOV_EN, NUM_OF_VFS) and the link type.

Firmware settings are per NIC, not per port, so the ports of a dual-port card (same PCI bus/device,
functions .0/.1) are decided together: NUM_OF_VFS is the largest numVfs asked of any port. Raising it
or enabling SR-IOV or changing a link type needs a reboot; lowering it is written without one (the
next reboot picks it up). Operator-configured NICs that left the spec get NUM_OF_VFS=0.
"""

from __future__ import annotations

from typing import Any

import structlog

from sriovop.host.errors import HostError
from sriovop.host.host import Host
from sriovop.host.plugins.base import Decision, spec_interfaces, status_interfaces
from sriovop.host.plugins.mstconfig import Mstconfig

log = structlog.get_logger("sriovop.host.plugins.mellanox")

VENDOR = "15b3"
LINK_TYPES = {"eth": 2, "ib": 1}


def nic_key(pci: str) -> str:
    """`0000:3b:00.1` → `0000:3b:00` (all functions of one card)."""
    return pci.rsplit(".", 1)[0]


class MellanoxPlugin:
    name = "mellanox_plugin"

    def __init__(self, host: Host, mstconfig: Mstconfig | None = None) -> None:
        self.host = host
        self.mst = mstconfig or Mstconfig()
        #: first-port PCI address → settings to write
        self.pending: dict[str, dict[str, int]] = {}

    def _changes(self, node_state: dict[str, Any]) -> tuple[dict[str, dict[str, int]], bool]:
        status = {s["pciAddress"]: s for s in status_interfaces(node_state) if s.get("vendor") == VENDOR}
        if not status:
            return {}, False
        spec = {s["pciAddress"]: s for s in spec_interfaces(node_state) if s["pciAddress"] in status}
        nics: dict[str, list[str]] = {}
        for pci in sorted(status):
            nics.setdefault(nic_key(pci), []).append(pci)
        changes: dict[str, dict[str, int]] = {}
        reboot = False
        for ports in nics.values():
            first = ports[0]
            in_spec = [p for p in ports if p in spec]
            if not in_spec:
                if any(self.host.records.exists(p) for p in ports):
                    fw = self.mst.query(first)
                    if fw.get("NUM_OF_VFS", 0) != 0:
                        changes[first] = {"NUM_OF_VFS": 0}
                continue
            fw = self.mst.query(first)
            want_vfs = max(int(spec[p].get("numVfs") or 0) for p in in_spec)
            settings: dict[str, int] = {}
            nic_reboot = False
            if want_vfs > 0 and fw.get("SRIOV_EN", 0) != 1:
                settings["SRIOV_EN"] = 1
                nic_reboot = True
            if want_vfs > fw.get("NUM_OF_VFS", 0):
                settings["NUM_OF_VFS"] = want_vfs
                nic_reboot = True
            for p in in_spec:
                link = (spec[p].get("linkType") or "").lower()
                key = f"LINK_TYPE_P{ports.index(p) + 1}"
                if link in LINK_TYPES and key in fw and fw[key] != LINK_TYPES[link]:
                    settings[key] = LINK_TYPES[link]
                    nic_reboot = True
            if settings:
                managed = [p for p in in_spec if spec[p].get("externallyManaged")]
                if managed:
                    raise HostError(f"pf {managed[0]}: firmware changes {settings} are needed but the PF is "
                                    "externallyManaged; configure the firmware out of band")
                changes[first] = settings
                reboot = reboot or nic_reboot
        return changes, reboot

    def on_node_state_change(self, node_state: dict[str, Any]) -> Decision:
        self.pending, reboot = self._changes(node_state)
        return Decision(drain=reboot, reboot=reboot)

    def check_status_changes(self, node_state: dict[str, Any]) -> bool:
        return self._changes(node_state)[1]

    def apply(self) -> None:
        for pci, settings in sorted(self.pending.items()):
            log.info("writing mellanox firmware settings", pf=pci, settings=settings)
            self.mst.set(pci, settings)
        self.pending = {}
