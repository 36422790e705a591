"""The main plugin on bare metal: configures every supported PF and decides drain/reboot like upstream.

The decision itself is `sriovop.host.decision.decide_generic` (pure, shared with `sriovop plan`); this
plugin feeds it the host's facts.
Software bridges (manageSoftwareBridges): spec.bridges differing from the managed bridges OVS has drains
(upstream; decided there too), drifts, and is applied after the SR-IOV configuration; a spec with
bridges on a daemon that does not manage them fails at `configure-ovs-bridge` instead of being ignored.
Kernel arguments: before deciding, the wanted ones are written to the boot configuration (kargs.py) and
the RDMA netns mode is applied to the running kernel (rdma.py); its kernel argument only counts as
missing when the running kernel could not take the mode.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import structlog

from sriovop.host import steps as S
from sriovop.host.apply import Applier, ApplyOptions, ApplyResult
from sriovop.host.decision import (
    HostFacts,
    bridges_changed,
    decide_generic,
    desired_kernel_args,
    missing_kernel_args,
    ovs_bridges,
)
from sriovop.host.errors import ApplyError
from sriovop.host.host import Host
from sriovop.host.kargs import RDMA_ARGS
from sriovop.host.ovs import OvsBridges
from sriovop.host.plan import need_to_update_sriov
from sriovop.host.plugins.base import Decision, spec_interfaces, status_interfaces
from sriovop.host.rdma import RdmaSubsystem
from sriovop.host.steps import StepHook

log = structlog.get_logger("sriovop.host.plugins.generic")


class GenericPlugin:
    name = "generic_plugin"

    def __init__(self, host: Host, *, hook: StepHook | None = None, options: ApplyOptions | None = None) -> None:
        self.host = host
        self.applier = Applier(host, hook=hook, options=options)
        self.hook = hook
        self.rdma = RdmaSubsystem(host.paths, host.io)
        self.desired: dict[str, Any] | None = None
        self.last_result: ApplyResult | None = None
        #: The host's facts of this pass, as the daemon published them (contribute_facts).
        self.published: HostFacts | None = None
        opts = options or ApplyOptions()
        self.bridges = OvsBridges(host.paths, opts.ovsdb_socket or None) if opts.manage_software_bridges else None
        if self.bridges is not None:
            self.applier.before_mode_change = self.bridges.detach_uplink

    def facts(self) -> HostFacts:
        return replace(self.host.facts(), manages_bridges=self.bridges is not None)

    def contribute_facts(self, node_state: dict[str, Any], facts: HostFacts) -> HostFacts:
        """Publishes whether this daemon manages software bridges (decide_generic reads it), and keeps
        the host's facts for this pass's drift check."""
        self.published = facts
        return replace(facts, manages_bridges=self.bridges is not None)

    def missing_kernel_args(self, node_state: dict[str, Any], facts: HostFacts | None = None) -> list[str]:
        """The wanted kernel arguments the running kernel lacks, judged from `facts` (read now when not
        given)."""
        return missing_kernel_args(spec_interfaces(node_state), facts if facts is not None else self.host.facts(),
                                   rdma_mode(node_state))

    def sync_kernel_args(self, node_state: dict[str, Any]) -> None:
        """Apply the RDMA mode, then write the wanted arguments for the next boot (BootConfigError when the
        host has no boot configuration the daemon can edit)."""
        mode = rdma_mode(node_state)
        self.rdma.apply(mode)
        self.host.kargs.sync(desired_kernel_args(spec_interfaces(node_state), self.host.facts(), mode))

    def on_node_state_change(self, node_state: dict[str, Any]) -> Decision:
        self.desired = node_state
        self.sync_kernel_args(node_state)
        result = decide_generic(node_state.get("spec"), node_state.get("status"), self.facts(), rdma_mode(node_state))
        for reason in result.drain_reasons:
            log.info("drain needed", reason=reason)
        return Decision(drain=result.drain, reboot=result.reboot)

    def check_status_changes(self, node_state: dict[str, Any]) -> bool:
        by_pci = {s["pciAddress"]: s for s in status_interfaces(node_state)}
        for spec in spec_interfaces(node_state):
            status = by_pci.get(spec["pciAddress"])
            if status is None or need_to_update_sriov(spec, status):
                return True
        if bridges_changed(node_state.get("spec"), node_state.get("status"), self.bridges is not None):
            return True
        mode = rdma_mode(node_state)
        if mode and self.rdma.mode() not in (None, mode):
            return True  # changed behind the daemon's back: set it again
        # The facts published on this pass: nothing has written to the host since discovery, so
        # reading them again (the RDMA mode is a round trip to the kernel) would only cost the pass.
        return bool(self.missing_kernel_args(node_state, self.published))

    def apply(self) -> None:
        if self.desired is None:
            return
        # Fresh discovery: the drain handshake may have taken minutes since on_node_state_change.
        self.last_result = self.applier.apply(spec_interfaces(self.desired))
        self.apply_bridges(ovs_bridges(self.desired.get("spec")))

    def apply_bridges(self, desired: list[dict[str, Any]]) -> None:
        first_pf = next((u.get("pciAddress", "") for b in desired for u in b.get("uplinks") or []), "")
        if self.bridges is None:
            if desired:
                raise ApplyError(first_pf, S.CONFIGURE_OVS_BRIDGE, "spec.bridges is set but this daemon does not "
                                 "manage software bridges (feature gate manageSoftwareBridges, flag "
                                 "--manage-software-bridges)")
            return
        for conf in desired:  # one bridge at a time, so the error names its uplink PF
            pf = next((u.get("pciAddress", "") for u in conf.get("uplinks") or []), "")
            if self.hook is not None:
                self.hook(S.CONFIGURE_OVS_BRIDGE, pf)
            try:
                self.bridges.configure_one(conf)
            except OSError as e:
                raise ApplyError(pf, S.CONFIGURE_OVS_BRIDGE, f"bridge {conf.get('name')}: {e.strerror or e}",
                                 errno=e.errno) from e
        try:
            self.bridges.remove_unwanted({str(b["name"]) for b in desired})
        except OSError as e:
            raise ApplyError(first_pf, S.CONFIGURE_OVS_BRIDGE, f"removing managed bridges: {e.strerror or e}",
                             errno=e.errno) from e


def rdma_mode(node_state: dict[str, Any]) -> str:
    mode = str(((node_state.get("spec") or {}).get("system") or {}).get("rdmaMode") or "")
    if mode not in ("", *RDMA_ARGS):
        raise ValueError(f"spec.system.rdmaMode: {mode!r} is not shared or exclusive")
    return mode
