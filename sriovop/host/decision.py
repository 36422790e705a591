"""The generic plugin's "drain? reboot?" decision as a pure function of the spec, the discovered
status and a few host facts.

The daemon builds `HostFacts` from the host (PF records, /proc/cmdline, the recorded kernel
arguments) and publishes them on its NodeState (`HOST_FACTS_ANNOTATION`), so that `sriovop plan`
can ask the very same function what a new spec would do to the node without touching it.

Drain: an operator-configured PF (it has a record) that has VFs now and needs an update, or that
leaves the spec (unless it was externally managed). Going from 0 VFs to N does not drain: no pod can
be using a VF that does not exist. Reboot: a kernel argument the configuration needs is missing from
the running kernel's command line; a reboot always drains.

`decide_node` is the whole node's answer, each rule from the plugin that applies it: the generic
plugin's (above, plus "spec.bridges differs from the managed OVS bridges" when the daemon manages
software bridges), the Mellanox plugin's firmware changes (`mellanox_firmware`, reboot) and, on
virtual platforms, the virtual plugin's instead (drain when an applied configuration changes, never
a reboot). The plugins contribute the facts they read to what the daemon publishes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sriovop.host.errors import ValidationError
from sriovop.host.kargs import RDMA_ARGS
from sriovop.host.mellanox_firmware import firmware_changes
from sriovop.host.ovs import normalise
from sriovop.host.plan import make_plan, needs_vfio, update_reasons

#: NodeState annotation where the daemon publishes its HostFacts (JSON); read by `sriovop plan`.
HOST_FACTS_ANNOTATION = "sriovop.io/host-facts"


@dataclass(frozen=True)
class HostFacts:
    #: PCI address → externallyManaged, for every PF the operator configured (it has a record).
    configured: Mapping[str, bool] = field(default_factory=dict)
    #: The arguments of the running kernel's command line.
    cmdline: frozenset[str] = frozenset()
    #: Arguments the host needs whatever the spec (e.g. pci=realloc after an allocation failure).
    recorded_kargs: frozenset[str] = frozenset()
    #: What vfio-pci needs on this CPU (intel_iommu=on iommu=pt, or iommu=pt on AMD).
    iommu_args: tuple[str, ...] = ()
    #: The running kernel's RDMA netns mode ("" without ib_core: the mode applies when it loads).
    rdma_mode: str = ""
    #: The daemon manages spec.bridges (manageSoftwareBridges); status.bridges is what OVS has.
    manages_bridges: bool = False
    #: First-port PCI address → mstconfig settings, per Mellanox card the Mellanox plugin decides.
    mellanox_firmware: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: First-port PCI addresses of the BlueField cards in DPU mode (their firmware is not changed here).
    mellanox_dpu: frozenset[str] = frozenset()
    #: The kernel lockdown mode ("" without): Mellanox firmware can then not be read or changed.
    lockdown: str = ""
    #: The virtual plugin is the main plugin (OpenStack, AWS): its last applied spec.interfaces.
    virtual: bool = False
    virtual_last_applied: tuple[Mapping[str, Any], ...] = ()

    def to_json(self) -> str:
        return json.dumps({"configured": dict(sorted(self.configured.items())),
                           "cmdline": sorted(self.cmdline), "recordedKernelArgs": sorted(self.recorded_kargs),
                           "iommuArgs": list(self.iommu_args), "rdmaMode": self.rdma_mode,
                           "managesBridges": self.manages_bridges, "mellanoxDpu": sorted(self.mellanox_dpu),
                           "lockdown": self.lockdown,
                           "mellanoxFirmware": {k: dict(v) for k, v in self.mellanox_firmware.items()},
                           "virtual": self.virtual, "virtualLastApplied": [dict(i) for i in self.virtual_last_applied]},
                          sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> HostFacts:
        """Raises ValueError on anything that is not what `to_json` writes."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("host facts: not a JSON object")
        configured = data.get("configured") or {}
        if not isinstance(configured, dict):
            raise ValueError("host facts: configured is not an object")
        firmware = data.get("mellanoxFirmware", {})
        last = data.get("virtualLastApplied", [])
        if not isinstance(firmware, dict) or not all(isinstance(v, dict) for v in firmware.values()):
            raise ValueError("host facts: mellanoxFirmware is not an object of objects")
        if not isinstance(last, list) or not all(isinstance(i, dict) for i in last):
            raise ValueError("host facts: virtualLastApplied is not a list of objects")
        return cls(configured={str(k): bool(v) for k, v in configured.items()},
                   cmdline=frozenset(str(a) for a in data.get("cmdline") or []),
                   recorded_kargs=frozenset(str(a) for a in data.get("recordedKernelArgs") or []),
                   iommu_args=tuple(str(a) for a in data.get("iommuArgs") or []),
                   rdma_mode=str(data.get("rdmaMode") or ""),
                   manages_bridges=bool(data.get("managesBridges")),
                   mellanox_dpu=frozenset(str(a) for a in data.get("mellanoxDpu") or []),
                   lockdown=str(data.get("lockdown") or ""),
                   mellanox_firmware={str(k): {str(n): int(x) for n, x in v.items()} for k, v in firmware.items()},
                   virtual=bool(data.get("virtual")), virtual_last_applied=tuple(last))


def desired_kernel_args(spec_interfaces: Sequence[Mapping[str, Any]], facts: HostFacts,
                        rdma_mode: str = "") -> set[str]:
    """What the next boot's command line should carry: the recorded needs, the IOMMU for vfio-pci, and
    `ib_core.netns_mode=` for spec.system.rdmaMode."""
    wanted = set(facts.recorded_kargs)
    if needs_vfio([dict(i) for i in spec_interfaces]):
        wanted |= set(facts.iommu_args)
    if rdma_mode:
        wanted.add(RDMA_ARGS[rdma_mode])
    return wanted


def missing_kernel_args(spec_interfaces: Sequence[Mapping[str, Any]], facts: HostFacts,
                        rdma_mode: str = "") -> list[str]:
    """The wanted arguments the running kernel lacks and needs a reboot for. The RDMA one does not count
    when the running kernel already has the mode (set at run time) or has no RDMA subsystem yet."""
    missing = desired_kernel_args(spec_interfaces, facts, rdma_mode) - facts.cmdline
    if rdma_mode and facts.rdma_mode in ("", rdma_mode):
        missing.discard(RDMA_ARGS[rdma_mode])
    return sorted(missing)


def drain_reasons(spec_interfaces: Sequence[Mapping[str, Any]], status_interfaces: Sequence[Mapping[str, Any]],
                  configured: Mapping[str, bool]) -> list[str]:
    """Why applying this spec drains the node (empty: it does not). Raises host.errors.ValidationError
    for a spec the host layer cannot apply."""
    plan = make_plan([dict(i) for i in spec_interfaces], [dict(i) for i in status_interfaces])
    reasons = []
    for spec, status in plan.configure:
        pf = spec["pciAddress"]
        if pf in configured and int(status.get("numVfs") or 0) > 0:
            why = "; ".join(update_reasons(spec, status))
            reasons.append(f"pf {pf} has {status.get('numVfs')} VFs and its configuration changes ({why})")
    for status in plan.reset:
        pf = status["pciAddress"]
        if pf in configured and not configured[pf] and int(status.get("numVfs") or 0) > 0:
            reasons.append(f"pf {pf} has {status.get('numVfs')} VFs and leaves the spec (reset)")
    return reasons


@dataclass(frozen=True)
class Disruption:
    """What applying a spec costs the node: `drain` implies evicting its pods, `reboot` implies both."""

    drain: bool
    reboot: bool
    drain_reasons: tuple[str, ...] = ()
    missing_kernel_args: tuple[str, ...] = ()
    #: Reboots for other causes than kernel arguments (Mellanox firmware).
    reboot_reasons: tuple[str, ...] = ()

    @property
    def level(self) -> str:
        return "reboot" if self.reboot else "drain" if self.drain else "none"


def decide(spec_interfaces: Sequence[Mapping[str, Any]], status_interfaces: Sequence[Mapping[str, Any]],
           facts: HostFacts, rdma_mode: str = "") -> Disruption:
    reasons = drain_reasons(spec_interfaces, status_interfaces, facts.configured)
    missing = missing_kernel_args(spec_interfaces, facts, rdma_mode)
    return Disruption(drain=bool(reasons or missing), reboot=bool(missing), drain_reasons=tuple(reasons),
                      missing_kernel_args=tuple(missing))


def ovs_bridges(part: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """`bridges.ovs` of a NodeState spec or status, normalised and sorted by name."""
    ovs = ((part or {}).get("bridges") or {}).get("ovs") or []
    return sorted((normalise(dict(b)) for b in ovs), key=lambda b: str(b.get("name")))


def bridges_changed(spec: Mapping[str, Any] | None, status: Mapping[str, Any] | None, manages: bool) -> bool:
    """spec.bridges.ovs differs from status.bridges.ovs (what OVS has for the managed bridges); only
    when the daemon manages them (else a spec with bridges fails at apply, it does not drain)."""
    return manages and ovs_bridges(spec) != ovs_bridges(status)


BRIDGES_REASON = "spec.bridges differs from the managed OVS bridges"


def decide_generic(spec: Mapping[str, Any] | None, status: Mapping[str, Any] | None, facts: HostFacts,
                   rdma_mode: str = "") -> Disruption:
    """The generic plugin's decision for a NodeState spec and status: `decide` plus the bridges."""
    result = decide(list((spec or {}).get("interfaces") or []), list((status or {}).get("interfaces") or []), facts,
                    rdma_mode)
    if not bridges_changed(spec, status, facts.manages_bridges):
        return result
    return replace(result, drain=True, drain_reasons=(*result.drain_reasons, BRIDGES_REASON))


def decide_virtual(spec: Mapping[str, Any] | None, last_applied: Sequence[Mapping[str, Any]]) -> Disruption:
    """The virtual plugin's decision: drain when a configuration it already applied changes (never on
    the first), never a reboot. Raises ValidationError for spec.bridges (upstream: "operation not
    supported by the platform"; refused, not ignored)."""
    if ovs_bridges(spec):
        raise ValidationError("spec.bridges: software bridges are not supported on virtual platforms (OpenStack, AWS)")
    spec_ifaces = [dict(i) for i in (spec or {}).get("interfaces") or []]
    drain = bool(last_applied) and spec_ifaces != [dict(i) for i in last_applied]
    return Disruption(drain=drain, reboot=False,
                      drain_reasons=("an applied configuration changes (virtual platform)",) if drain else ())


def decide_node(spec: Mapping[str, Any] | None, status: Mapping[str, Any] | None, facts: HostFacts) -> Disruption:
    """What the daemon's plugins together decide for this spec (see the module docstring). Raises
    host.errors.HostError for a spec the daemon would refuse."""
    spec_ifaces = list((spec or {}).get("interfaces") or [])
    if facts.virtual:
        return decide_virtual(spec, facts.virtual_last_applied)
    mode = str(((spec or {}).get("system") or {}).get("rdmaMode") or "")
    if mode not in ("", *RDMA_ARGS):
        raise ValidationError(f"spec.system.rdmaMode: {mode!r} is not shared or exclusive")
    result = decide_generic(spec, status, facts, mode)
    firmware = firmware_changes(spec_ifaces, list((status or {}).get("interfaces") or []), facts.mellanox_firmware,
                                set(facts.configured), dpu=facts.mellanox_dpu, lockdown=facts.lockdown)
    if not firmware.reboot:
        return result
    return replace(result, drain=True, reboot=True, reboot_reasons=(*result.reboot_reasons, *firmware.reasons))
