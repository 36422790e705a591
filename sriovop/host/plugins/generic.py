"""The main plugin on bare metal: configures every supported PF and decides drain/reboot like upstream.

The decision itself is `sriovop.host.decision.decide` (pure, shared with `sriovop plan`); this plugin
feeds it the host's facts.
"""

from __future__ import annotations

from typing import Any

import structlog

from sriovop.host.apply import Applier, ApplyOptions, ApplyResult
from sriovop.host.decision import decide, missing_kernel_args
from sriovop.host.host import Host
from sriovop.host.plan import need_to_update_sriov
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
        return missing_kernel_args(spec_interfaces(node_state), self.host.facts())

    def on_node_state_change(self, node_state: dict[str, Any]) -> Decision:
        self.desired = node_state
        result = decide(spec_interfaces(node_state), status_interfaces(node_state), self.host.facts())
        for reason in result.drain_reasons:
            log.info("drain needed", reason=reason)
        return Decision(drain=result.drain, reboot=result.reboot)

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
