"""Where a NodeState's spec and the host it describes differ, one warning per field, for as long as it
lasts. The daemon's own decision code says which: `host.plan.update_reasons` (what an apply would still
change: pending while a sync runs, stuck when it failed) and `host.plan.resulting_pf_mtu` (a lower PF
MTU that the daemon never applies, so the difference stays after a successful sync)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sriovop.host.errors import ValidationError
from sriovop.host.plan import resulting_pf_mtu, update_reasons

#: Why a PF keeps an MTU above the spec's after a successful apply.
MTU_KEPT_REASON = ("the config daemon only raises a PF's MTU (as upstream does); a lower MTU takes effect only "
                   "when the PF is reset (its policies removed)")


@dataclass(frozen=True)
class Drift:
    """Where one node's host and spec differ: the warnings to show, and whether an apply would still
    change the host (a sync pending or stuck), as against only a difference the daemon keeps on purpose
    (a PF MTU above the spec's), which stays after a successful sync."""

    warnings: list[str] = field(default_factory=list)
    pending: bool = False


def _pf_drift(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Drift:
    name = status.get("name") or spec.get("pciAddress")
    spec_mtu, host_mtu = int(spec.get("mtu") or 0), int(status.get("mtu") or 0)
    out: list[str] = []
    if spec_mtu and resulting_pf_mtu(spec_mtu, host_mtu) != spec_mtu:
        out.append(f"pf {name}: mtu is {host_mtu}, the spec asks {spec_mtu}: kept at {host_mtu}: {MTU_KEPT_REASON}")
    try:
        reasons = update_reasons(dict(spec), dict(status))
    except (ValidationError, KeyError, ValueError, TypeError):
        reasons = []
    out.extend(f"pf {name}: the host differs from the spec: {r} (pending: the daemon applies it)" for r in reasons)
    return Drift(out, bool(reasons))


def node_drift(spec_interfaces: Sequence[Mapping[str, Any]], status_interfaces: Sequence[Mapping[str, Any]]
               ) -> Drift:
    by_pci = {str(i.get("pciAddress")): i for i in status_interfaces}
    warnings: list[str] = []
    pending = False
    for spec in spec_interfaces:
        status = by_pci.get(str(spec.get("pciAddress")))
        if status is None:
            warnings.append(f"pf {spec.get('pciAddress')}: in the spec, but the host does not report it")
            pending = True
            continue
        pf = _pf_drift(spec, status)
        warnings.extend(pf.warnings)
        pending = pending or pf.pending
    return Drift(warnings, pending)
