"""Mellanox/NVIDIA NICs: firmware must allow the VFs (SRIOV_EN, NUM_OF_VFS) and the link type.

Firmware settings are per NIC, not per port, so the ports of a dual-port card (same PCI bus/device,
functions .0/.1) are decided together: NUM_OF_VFS is the largest numVfs asked of any port. Raising it
or enabling SR-IOV or changing a link type needs a reboot; lowering it is written without one (the
next reboot picks it up). Operator-configured NICs that left the spec get NUM_OF_VFS=0.

As upstream, firmware is left alone where it cannot or must not be changed: under kernel lockdown
(`/sys/kernel/security/lockdown` not `[none]`) the tools cannot reach the NIC, so a spec naming a Mellanox
PF fails and nothing is queried; a BlueField in DPU mode is configured from its Arm side, so a change it
would need fails naming the PF. With the `mellanoxFirmwareReset` gate (default on) each NIC whose change
needs a reboot is reset with `mstfwreset` after `mstconfig set` (best effort: the reboot follows anyway).
"""

from __future__ import annotations

from typing import Any

import structlog

from sriovop.host.errors import HostError
from sriovop.host.host import Host
from sriovop.host.plugins.base import Decision, spec_interfaces, status_interfaces
from sriovop.host.plugins.mstconfig import Mstconfig, Mstfwreset, is_bluefield_dpu, numeric
from sriovop.host.sysfs import read_str

log = structlog.get_logger("sriovop.host.plugins.mellanox")

VENDOR = "15b3"
LINK_TYPES = {"eth": 2, "ib": 1}


def nic_key(pci: str) -> str:
    """`0000:3b:00.1` → `0000:3b:00` (all functions of one card)."""
    return pci.rsplit(".", 1)[0]


class MellanoxPlugin:
    name = "mellanox_plugin"

    def __init__(self, host: Host, mstconfig: Mstconfig | None = None, *, firmware_reset: bool = True,
                 mstfwreset: Mstfwreset | None = None) -> None:
        self.host = host
        self.mst = mstconfig or Mstconfig()
        self.fwreset = mstfwreset or Mstfwreset()
        #: The mellanoxFirmwareReset feature gate (the daemon sets it from the operator config).
        self.firmware_reset = firmware_reset
        #: first-port PCI address → settings to write
        self.pending: dict[str, dict[str, int]] = {}
        #: NICs whose pending settings only load at the next boot (reset with the gate on).
        self.needs_reset: list[str] = []
        #: What the last mstfwreset attempts said (for the reboot message).
        self.reset_errors: dict[str, str] = {}

    def lockdown(self) -> str:
        """The kernel lockdown mode (`integrity`, `confidentiality`), or "" when there is none."""
        raw = read_str(self.host.paths.sys / "kernel/security/lockdown") or ""
        selected = [w.strip("[]") for w in raw.split() if w.startswith("[")]
        return selected[0] if selected and selected[0] != "none" else ""

    def _changes(self, node_state: dict[str, Any]) -> tuple[dict[str, dict[str, int]], bool]:
        status = {s["pciAddress"]: s for s in status_interfaces(node_state) if s.get("vendor") == VENDOR}
        if not status:
            return {}, False
        spec = {s["pciAddress"]: s for s in spec_interfaces(node_state) if s["pciAddress"] in status}
        mode = self.lockdown()
        if mode:
            if spec:
                raise HostError(f"pf {sorted(spec)[0]}: kernel lockdown ({mode}) is on: Mellanox firmware "
                                "cannot be read or changed; turn lockdown off or remove the Mellanox PFs "
                                "from the policies")
            log.info("kernel lockdown: skipping Mellanox firmware processing", lockdown=mode)
            return {}, False
        self.needs_reset = []
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
            text = self.mst.query_text(first)
            fw = numeric(text)
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
                if is_bluefield_dpu(text):
                    raise HostError(f"pf {in_spec[0]}: firmware changes {settings} are needed but the NIC is a "
                                    "BlueField in DPU mode, where a host reboot does not reload its firmware; "
                                    "configure it from the DPU")
                changes[first] = settings
                if nic_reboot:
                    self.needs_reset.append(first)
                reboot = reboot or nic_reboot
        return changes, reboot

    def on_node_state_change(self, node_state: dict[str, Any]) -> Decision:
        self.pending, reboot = self._changes(node_state)
        return Decision(drain=reboot, reboot=reboot)

    def check_status_changes(self, node_state: dict[str, Any]) -> bool:
        return self._changes(node_state)[1]

    def apply(self) -> None:
        if self.pending and self.lockdown():
            raise HostError(f"kernel lockdown ({self.lockdown()}) is on: Mellanox firmware cannot be changed")
        for pci, settings in sorted(self.pending.items()):
            log.info("writing mellanox firmware settings", pf=pci, settings=settings)
            self.mst.set(pci, settings)
        self.reset_errors = {}
        if self.firmware_reset:
            for pci in self.needs_reset:
                if pci not in self.pending:
                    continue
                try:
                    self.fwreset.reset(pci)
                    log.info("mellanox firmware reset", pf=pci)
                except Exception as e:  # best effort, as upstream: the reboot loads the settings anyway
                    log.warning("mstfwreset failed; the reboot will load the firmware settings", pf=pci, error=str(e))
                    self.reset_errors[pci] = str(e)
        self.pending = {}
