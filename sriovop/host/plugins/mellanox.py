"""Mellanox/NVIDIA NICs: firmware must allow the VFs (SRIOV_EN, NUM_OF_VFS) and the link type.

The decision is `sriovop.host.mellanox_firmware.firmware_changes` (pure, shared with `sriovop plan`,
where the per-card and lockdown rules are described); this plugin reads the kernel lockdown mode,
queries the firmware with `mstconfig`, feeds both to it and writes the changes. With the
`mellanoxFirmwareReset` gate (default on) each NIC whose change needs a reboot is reset with
`mstfwreset` after `mstconfig set` (best effort: the reboot follows anyway). Queries are kept for the
boot in the Host's `firmware_queries` (plugins are built anew each pass) and dropped when this plugin
writes firmware settings, so a pass at rest runs no `mstconfig`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import structlog

from sriovop.host.decision import HostFacts
from sriovop.host.errors import HostError
from sriovop.host.host import Host
from sriovop.host.mellanox_firmware import VENDOR, FirmwareChanges, cards, firmware_changes, nics_to_query
from sriovop.host.plugins.base import Decision, spec_interfaces, status_interfaces
from sriovop.host.plugins.mstconfig import Mstconfig, MstconfigError, Mstfwreset, is_bluefield_dpu, numeric
from sriovop.host.sysfs import read_str

log = structlog.get_logger("sriovop.host.plugins.mellanox")

__all__ = ["VENDOR", "MellanoxPlugin"]


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

    def _query(self, pcis: list[str], *, skip_errors: bool = False) -> tuple[dict[str, dict[str, int]], set[str]]:
        """Numeric settings per card and the cards that are BlueField DPUs."""
        firmware: dict[str, dict[str, int]] = {}
        dpu: set[str] = set()
        for pci in pcis:
            try:
                text = self.host.firmware_queries.get(pci, self.mst.query_text)
            except MstconfigError as exc:
                if not skip_errors:
                    raise
                log.warning("firmware settings not published", pf=pci, error=str(exc))
                continue
            firmware[pci] = numeric(text)
            if is_bluefield_dpu(text):
                dpu.add(pci)
        return firmware, dpu

    def contribute_facts(self, node_state: dict[str, Any], facts: HostFacts) -> HostFacts:
        """Publishes the lockdown mode and the firmware settings of every Mellanox card, so `sriovop plan`
        decides as this plugin does, also for a card no policy selected yet. A card mstconfig cannot
        read is left out (plan then does not decide its firmware); nothing is queried under lockdown."""
        mode = self.lockdown()
        if mode:
            return replace(facts, lockdown=mode)
        firmware, dpu = self._query(cards(status_interfaces(node_state)), skip_errors=True)
        return replace(facts, mellanox_firmware=firmware, mellanox_dpu=frozenset(dpu))

    def _changes(self, node_state: dict[str, Any]) -> FirmwareChanges:
        spec, status = spec_interfaces(node_state), status_interfaces(node_state)
        configured = set(self.host.records.all())
        mode = self.lockdown()
        firmware, dpu = ({}, set()) if mode else self._query(nics_to_query(spec, status, configured))
        result = firmware_changes(spec, status, firmware, configured, dpu=dpu, lockdown=mode)
        if mode and any(s.get("vendor") == VENDOR for s in status):
            log.info("kernel lockdown: skipping Mellanox firmware processing", lockdown=mode)
        for reason in result.reasons:
            log.info("reboot needed", reason=reason)
        return result

    def on_node_state_change(self, node_state: dict[str, Any]) -> Decision:
        result = self._changes(node_state)
        self.pending = {k: dict(v) for k, v in result.settings.items()}
        self.needs_reset = list(result.reboot_cards)
        return Decision(drain=result.reboot, reboot=result.reboot)

    def check_status_changes(self, node_state: dict[str, Any]) -> bool:
        return self._changes(node_state).reboot

    def apply(self) -> None:
        if self.pending and self.lockdown():
            raise HostError(f"kernel lockdown ({self.lockdown()}) is on: Mellanox firmware cannot be changed")
        try:
            self._write()
        finally:
            if self.pending:  # even a failed write may have changed some settings
                self.host.firmware_queries.invalidate()
            self.pending = {}

    def _write(self) -> None:
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
