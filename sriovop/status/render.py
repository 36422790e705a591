"""Plain-text rendering of `ClusterStatus`; colour is for terminals only, never for pipes or files."""

from __future__ import annotations

import click

from sriovop.api.v1 import consts
from sriovop.controllers.policy_status import FAILED
from sriovop.status.model import ClusterStatus, NodeStatus
from sriovop.status.pools import PoolProgress

#: Failed nodes named under `--summary`, with their errors; the rest are counted.
MAX_FAILED_SHOWN = 10

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
    lines.extend(_pool_table(report.pools, colour))
    return "\n".join(lines) + "\n"


def render_summary(report: ClusterStatus, colour: bool = False) -> str:
    """The pool table, then each failed node with its error (up to MAX_FAILED_SHOWN)."""
    if not report.nodes:
        return f"no SriovNetworkNodeStates in namespace {report.namespace}\n"
    lines = _pool_table(report.pools, colour)
    failed = [n for n in report.nodes if n.phase == FAILED]
    if failed:
        lines.append("")
    for node in failed[:MAX_FAILED_SHOWN]:
        lines.append(_paint(f"failed: {node.node}: {node.last_sync_error or '(no error reported)'}", "red", colour))
    if len(failed) > MAX_FAILED_SHOWN:
        more = len(failed) - MAX_FAILED_SHOWN
        lines.append(_paint(f"failed: {more} more (`sriovop status -o json` lists every node)", "red", colour))
    return "\n".join(lines) + "\n"


def _budget(pool: PoolProgress) -> str:
    """Nodes holding a drain slot against the pool's limit: `3/9`, `3/unlimited`, or `3/?` when none
    applies."""
    if pool.limit is None:
        return f"{pool.slots_held}/?"
    return f"{pool.slots_held}/{'unlimited' if pool.limit < 0 else pool.limit}"


def _pool_table(pools: list[PoolProgress], colour: bool) -> list[str]:
    header = (f"{'POOL':<20} {'NODES':>6} {'READY':>6} {'APPLYING':>9} {'WAITING':>8} "
              f"{'DRAINING':>10} {'FAILED':>7} {'CORDONED':>9}")
    lines = [_paint(header, None, colour)]
    for p in pools:
        failed = _paint(f"{p.failed:>7}", "red" if p.failed else None, colour)
        lines.append(f"{p.name[:20]:<20} {p.nodes:>6} {p.ready:>6} {p.applying:>9} {p.waiting:>8} "
                     f"{_budget(p):>10} {failed} {p.cordoned:>9}")
        if p.error:
            lines.append("  " + _paint(p.error, "red", colour))
    return lines
