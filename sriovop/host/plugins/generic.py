"""The main plugin on bare metal: configures every supported PF and decides drain/reboot like upstream.

Drain: an operator-configured PF (it has a record file) that has VFs now and needs an update, or that
leaves the spec. Going from 0 VFs to N does not drain (no pod can be using a VF that does not exist).
Reboot: a kernel argument the configuration needs is missing from /proc/cmdline.
"""

from __future__ import annotations

from typing import Any

import structlog

from sriovop.host.apply import Applier, ApplyOptions, ApplyResult
from sriovop.host.host import Host
from sriovop.host.plan import make_plan, need_to_update_sriov, needs_vfio
from sriovop.host.plugins.base import Decision, spec_interfaces, status_interfaces
from sriovop.host.steps import StepHook

log = structlog.get_logger("sriovop.host.plugins.generic")


class GenericPlugin:
    name = "generic_plugin"

    def __init__(self, host: Host, *, hook: StepHook | None = None, options: ApplyOptions | None = None) -> None:
        self.host = host
        self.applier = Applier(host, hook=hook, options=options)
        self.desired: dict[str, Any] | None = None
        self.last_result: ApplyResult | None = None

    def missing_kernel_args(self, node_state: dict[str, Any]) -> list[str]:
        return self.host.kargs.missing(needs_vfio=needs_vfio(spec_interfaces(node_state)))

    def needs_drain(self, node_state: dict[str, Any]) -> bool:
        plan = make_plan(spec_interfaces(node_state), status_interfaces(node_state))
        records = self.host.records
        for spec, status in plan.configure:
            pf = spec["pciAddress"]
            if records.exists(pf) and int(status.get("numVfs") or 0) > 0:
                log.info("drain needed: configured PF with VFs changes", pf=pf)
                return True
        for status in plan.reset:
            pf = status["pciAddress"]
            if records.exists(pf) and not records.externally_managed(pf) and int(status.get("numVfs") or 0) > 0:
                log.info("drain needed: configured PF leaves the spec", pf=pf)
                return True
        return False

    def on_node_state_change(self, node_state: dict[str, Any]) -> Decision:
        self.desired = node_state
        reboot = bool(self.missing_kernel_args(node_state))
        return Decision(drain=self.needs_drain(node_state) or reboot, reboot=reboot)

    def check_status_changes(self, node_state: dict[str, Any]) -> bool:
        by_pci = {s["pciAddress"]: s for s in status_interfaces(node_state)}
        for spec in spec_interfaces(node_state):
            status = by_pci.get(spec["pciAddress"])
            if status is None or need_to_update_sriov(spec, status):
                return True
        return bool(self.missing_kernel_args(node_state))

    def apply(self) -> None:
        if self.desired is None:
            return
        # Fresh discovery: the drain handshake may have taken minutes since on_node_state_change.
        self.last_result = self.applier.apply(spec_interfaces(self.desired))
