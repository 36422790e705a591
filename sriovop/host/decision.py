"""The generic plugin's "drain? reboot?" decision as a pure function of the spec, the discovered
status and a few host facts.

The daemon builds `HostFacts` from the host (PF records, /proc/cmdline, the recorded kernel
arguments) and publishes them on its NodeState (`HOST_FACTS_ANNOTATION`), so that `sriovop plan`
can ask the very same function what a new spec would do to the node without touching it.

Drain: an operator-configured PF (it has a record) that has VFs now and needs an update, or that
leaves the spec (unless it was externally managed). Going from 0 VFs to N does not drain: no pod can
be using a VF that does not exist. Reboot: a kernel argument the configuration needs is missing from
the running kernel's command line; a reboot always drains.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sriovop.host.kargs import RDMA_ARGS
from sriovop.host.plan import make_plan, needs_vfio

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

    def to_json(self) -> str:
        return json.dumps({"configured": dict(sorted(self.configured.items())),
                           "cmdline": sorted(self.cmdline), "recordedKernelArgs": sorted(self.recorded_kargs),
                           "iommuArgs": list(self.iommu_args), "rdmaMode": self.rdma_mode},
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
        return cls(configured={str(k): bool(v) for k, v in configured.items()},
                   cmdline=frozenset(str(a) for a in data.get("cmdline") or []),
                   recorded_kargs=frozenset(str(a) for a in data.get("recordedKernelArgs") or []),
                   iommu_args=tuple(str(a) for a in data.get("iommuArgs") or []),
                   rdma_mode=str(data.get("rdmaMode") or ""))


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
            reasons.append(f"pf {pf} has {status.get('numVfs')} VFs and its configuration changes")
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

    @property
    def level(self) -> str:
        return "reboot" if self.reboot else "drain" if self.drain else "none"


def decide(spec_interfaces: Sequence[Mapping[str, Any]], status_interfaces: Sequence[Mapping[str, Any]],
           facts: HostFacts, rdma_mode: str = "") -> Disruption:
    reasons = drain_reasons(spec_interfaces, status_interfaces, facts.configured)
    missing = missing_kernel_args(spec_interfaces, facts, rdma_mode)
    return Disruption(drain=bool(reasons or missing), reboot=bool(missing), drain_reasons=tuple(reasons),
                      missing_kernel_args=tuple(missing))
