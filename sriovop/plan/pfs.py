"""One row per PF of a node's plan: the spec before and after, and what the config daemon will do to
the host, from its own decision code (`host.plan.make_plan`, `update_reasons`, `resulting_pf_mtu`).

The spec and the host can differ after a successful apply: the daemon only raises a PF's MTU, so a
lower MTU in the spec is "kept" at the host's value, and the row says so and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sriovop.controllers.node_policy_desired import NodeOutcome, normalized, status_interfaces
from sriovop.host.errors import ValidationError
from sriovop.host.plan import make_plan, resulting_pf_mtu, update_reasons
from sriovop.status.drift import MTU_KEPT_REASON

Obj = Mapping[str, Any]



def mtu_outcome(spec_mtu: int, host_mtu: int) -> dict[str, Any]:
    """The PF MTU the host will have: {"result", "kept", "reason"} (kept: the spec asks lower)."""
    result = resulting_pf_mtu(spec_mtu, host_mtu) if spec_mtu else host_mtu
    kept = bool(spec_mtu) and result != spec_mtu
    out: dict[str, Any] = {"result": result, "kept": kept}
    if kept:
        out["reason"] = MTU_KEPT_REASON
    return out


def _host_actions(spec_ifaces: list[dict[str, Any]], status: list[dict[str, Any]]) -> dict[str, tuple[str, list[str]]]:
    """PCI address → (configure | none | reset | missing, the daemon's reasons)."""
    try:
        plan = make_plan(spec_ifaces, status)
    except ValidationError as exc:
        return {str(i.get("pciAddress")): ("refused", [str(exc)]) for i in spec_ifaces}
    out: dict[str, tuple[str, list[str]]] = {}
    for spec, st in plan.configure:
        out[spec["pciAddress"]] = ("configure", update_reasons(spec, st))
    for spec, _st in plan.unchanged:
        out[spec["pciAddress"]] = ("none", [])
    for st in plan.reset:
        if int(st.get("numVfs") or 0) > 0:
            out[st["pciAddress"]] = ("reset", [f"numVfs: {st.get('numVfs')} -> 0"])
    for spec in plan.missing:
        out[spec["pciAddress"]] = ("missing", ["the host has no such PF"])
    return out


def pf_rows(outcome: NodeOutcome) -> list[dict[str, Any]]:
    status_list = [dict(i) for i in status_interfaces(outcome.state)]
    status = {str(i.get("pciAddress")): i for i in status_list}
    before = {str(i.get("pciAddress")): i for i in ((outcome.state or {}).get("spec") or {}).get("interfaces") or []}
    after = [dict(i) for i in outcome.spec.get("interfaces") or []]
    host = _host_actions(after, status_list) if status_list else {}
    rows: list[dict[str, Any]] = []
    for iface in after:
        pci = str(iface.get("pciAddress"))
        st, old = status.get(pci) or {}, before.get(pci) or {}
        spec_mtu, host_mtu = int(iface.get("mtu") or 0), int(st.get("mtu") or 0)
        action, reasons = host.get(pci, ("none", []))
        rows.append({
            "pciAddress": pci, "name": iface.get("name") or st.get("name") or "",
            "numVfs": {"before": int(old.get("numVfs") or 0), "after": int(iface.get("numVfs") or 0),
                       "host": int(st.get("numVfs") or 0)},
            "mtu": {"before": int(old.get("mtu") or 0), "after": spec_mtu, "host": host_mtu,
                    **mtu_outcome(spec_mtu, host_mtu)},
            "linkType": iface.get("linkType") or "", "eSwitchMode": iface.get("eSwitchMode") or "",
            "vfGroups": [dict(g) for g in iface.get("vfGroups") or []],
            "action": "unchanged" if normalized(old) == normalized(iface) else "configure" if old else "add",
            "hostAction": action, "hostReasons": reasons,
        })
    wanted = {str(i.get("pciAddress")) for i in after}
    for pci, old in before.items():
        if pci in wanted:
            continue
        st = status.get(pci) or {}
        action, reasons = host.get(pci, ("none", []))
        rows.append({"pciAddress": pci, "name": old.get("name") or st.get("name") or "",
                     "numVfs": {"before": int(old.get("numVfs") or 0), "after": 0, "host": int(st.get("numVfs") or 0)},
                     "mtu": {"before": int(old.get("mtu") or 0), "after": 0, "host": int(st.get("mtu") or 0),
                             "result": int(st.get("mtu") or 0), "kept": False},
                     "linkType": "", "eSwitchMode": "", "vfGroups": [], "action": "reset",
                     "hostAction": action, "hostReasons": reasons})
    return rows


def pf_warnings(rows: list[dict[str, Any]]) -> list[str]:
    """What the spec asks and the host will not have after a successful apply, naming the field."""
    return [f"pf {r['name'] or r['pciAddress']}: mtu kept at {r['mtu']['result']}, not the spec's "
            f"{r['mtu']['after']}: {r['mtu']['reason']}" for r in rows if r["mtu"].get("kept")]
