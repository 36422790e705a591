"""Plain-text rendering of `ClusterStatus`; colour is for terminals only, never for pipes or files."""

from __future__ import annotations

import click

from sriovop.api.v1 import consts
from sriovop.status.model import ClusterStatus, NodeStatus

_SYNC_COLOURS = {
    consts.SYNC_STATUS_SUCCEEDED: "green",
    consts.SYNC_STATUS_IN_PROGRESS: "yellow",
    consts.SYNC_STATUS_FAILED: "red",
}


def _paint(text: str, colour: str | None, enabled: bool) -> str:
    return click.style(text, fg=colour) if enabled and colour else text


def _node_header(node: NodeStatus, colour: bool) -> str:
    sync = _paint(node.sync_status, _SYNC_COLOURS.get(node.sync_status), colour)
    drain = node.drain_current or "-"
    if node.drain_requested and node.drain_requested != consts.DRAIN_IDLE:
        drain = f"{node.drain_requested} -> {drain}"
    cordon = ", cordoned" if node.unschedulable else ""
    return f"NODE {node.node}  sync={sync}  drain={drain}{cordon}"


def render_text(report: ClusterStatus, colour: bool = False) -> str:
    if not report.nodes:
        return f"no SriovNetworkNodeStates in namespace {report.namespace}\n"
    lines: list[str] = []
    header = f"  {'PF':<12} {'PCI':<14} {'MODEL':<32} {'VFS':>9} {'MTU':>6}  LINK"
    for node in report.nodes:
        lines.append(_node_header(node, colour))
        if node.last_sync_error:
            lines.append("  " + _paint(f"last error: {node.last_sync_error}", "red", colour))
        lines.extend("  " + _paint(f"warning: {w}", "yellow", colour) for w in node.warnings)
        if not node.pfs:
            lines.append("  (no SR-IOV capable interfaces reported yet)")
        else:
            lines.append(_paint(header, None, colour))
        for pf in node.pfs:
            vfs = f"{pf.num_vfs}/{pf.total_vfs}"
            if pf.desired_vfs is not None and pf.desired_vfs != pf.num_vfs:
                vfs = f"{pf.num_vfs}->{pf.desired_vfs}/{pf.total_vfs}"
            mtu = str(pf.mtu) if pf.mtu else "-"
            lines.append(f"  {pf.name:<12} {pf.pci_address:<14} {pf.model[:32]:<32} {vfs:>9} {mtu:>6}  {pf.link}")
            for g in pf.vf_groups:
                lines.append(f"      VFs {g.vf_range:<7} -> {g.resource} ({g.device_type}, policy {g.policy})")
        lines.append("")
    return "\n".join(lines)
