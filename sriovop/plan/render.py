"""Text for `sriovop plan` and `sriovop explain`: one block per node, the reasons spelled out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from sriovop.api.v1 import consts
from sriovop.exitcodes import EXIT_MEANINGS


def _groups(groups: list[Mapping[str, Any]]) -> str:
    return ", ".join(f"{g.get('resourceName')} VFs {g.get('vfRange')} "
                     f"{g.get('deviceType') or consts.DEVICE_TYPE_NETDEVICE} ({g.get('policyName')})"
                     for g in groups) or "-"


def render_plan(plan: Mapping[str, Any], colour: bool = False) -> str:
    def paint(text: str, fg: str) -> str:
        return click.style(text, fg=fg) if colour else text

    lines: list[str] = []
    adm = plan["admission"]
    for change, verdict in zip(plan["changes"], adm["policies"], strict=True):
        if not change["allowed"]:
            state = paint(" DENIED", "red")
        elif "wouldDeny" in verdict:
            state = paint(f" (stored although the webhook's rules refuse {verdict['wouldDeny']['field']})", "yellow")
        else:
            state = ""
        lines.append(f"policy {change['policy']}: {change['operation']}{state}")
    mode = {"enforced": "a policy webhook enforces the rules",
            "none": "no policy webhook enforces the rules: the API server stores what its schema accepts",
            "refused": "a policy webhook cannot be reached and refuses every write"}.get(adm.get("mode", ""), "")
    lines.append("admission: " + (paint("allowed", "green") if adm["allowed"]
                                  else paint(f"DENIED: {adm['message']}", "red")) + (f" ({mode})" if mode else ""))
    lines.extend(paint(f"  warning: {w}", "yellow") for w in adm["warnings"])
    for hook in adm.get("webhooks") or []:
        if not hook["reachable"]:
            lines.append(paint(f"  webhook {hook['name']} ({hook['configuration']}) unreachable: {hook['problem']}; "
                               f"{hook['whenUnreachable']}", "red"))
    for node in plan["nodes"]:
        scope = {"sriov-pods": " (evicts the pods using SR-IOV resources)", "all-pods": " (evicts every pod)"}.get(
            node.get("drainScope", ""), "")
        what = f"changes, disruption {node['disruption']}{scope}" if node["changed"] else "unchanged"
        head = f"\nnode {node['name']}: {what}"
        if node.get("pool"):
            head += f" (pool {node['pool']})"
        lines.append(head)
        for key in ("note", "error", "daemonError", "factsNote", "poolError"):
            if node.get(key):
                lines.append(f"  {key}: {node[key]}")
        lines.extend(paint(f"  warning: {w}", "yellow") for w in node.get("warnings") or [])
        for reason in node.get("drainReasons") or []:
            lines.append(f"  drain: {reason}")
        if node.get("missingKernelArgs"):
            lines.append("  reboot: kernel arguments missing: " + " ".join(node["missingKernelArgs"]))
        for reason in node.get("rebootReasons") or []:
            lines.append(f"  reboot: {reason}")
        for pf in node["pfs"]:
            if pf["action"] == "unchanged" and not node["changed"]:
                continue
            vfs, mtu = pf["numVfs"], pf["mtu"]
            mtu_text = (f"MTU kept at {mtu['result']} (spec {mtu['before'] or '-'} -> {mtu['after']})"
                        if mtu.get("kept") else f"MTU {mtu['before'] or '-'} -> {mtu['after'] or '-'}")
            lines.append(f"  pf {pf['name'] or '?'} {pf['pciAddress']}: {pf['action']}; VFs {vfs['before']} -> "
                         f"{vfs['after']} (host has {vfs['host']}), {mtu_text}"
                         + (f", linkType {pf['linkType']}" if pf["linkType"] else "")
                         + (f", eSwitchMode {pf['eSwitchMode']}" if pf["eSwitchMode"] else ""))
            if pf.get("hostReasons"):
                lines.append(f"    daemon: {pf['hostAction']}: {'; '.join(pf['hostReasons'])}")
            if pf["vfGroups"]:
                lines.append(f"    groups: {_groups(pf['vfGroups'])}")
        for v in node["selection"]:
            if v["result"] != "selected":
                lines.append(f"  {v['policy']} on {v['pf']}: {v['result']} ({v.get('field', '')}): {v['reason']}")
        for v in node["contested"]:
            if v not in node["selection"]:
                lines.append(f"  {v['policy']} on {v['pf']}: {v['reason']}")
        res = node["resources"]
        for kind in ("added", "changed", "removed"):
            for row in res[kind]:
                count = row["allocatable"]
                reported = f", the node reports {count['reported']}" if "reported" in count else ""
                selectors = ", device-plugin selectors change" if row.get("selectorsChanged") else ""
                lines.append(f"  resource {row['resourceName']} {kind}: allocatable {count['before']} -> "
                             f"{count['after']}{reported}{selectors}")
    if plan["pools"]:
        lines.append("")
    for pool in plan["pools"]:
        limit = "unlimited" if pool["limit"] < 0 else pool["limit"]
        text = (f"pool {pool['name']}: {len(pool['disrupted'])} of {pool['nodes']} nodes disrupted, maxUnavailable "
                f"{limit}: {pool['atOnce']} at once, {pool['waves'] if pool['waves'] is not None else 'no'} wave(s)")
        lines.append(text)
        if pool.get("blocked"):
            lines.append(f"  {pool['blocked']}")
    for err in plan["errors"]:
        lines.append(f"operator error: {err}")
    for note in plan["notes"]:
        lines.append(f"note: {note}")
    lines.append(f"exit code {plan['exitCode']}: " + EXIT_MEANINGS[plan["exitCode"]])
    return "\n".join(lines) + "\n"


def render_explain(report: Mapping[str, Any], colour: bool = False) -> str:
    def paint(text: str, fg: str) -> str:
        return click.style(text, fg=fg) if colour else text

    lines: list[str] = []
    for node in report["nodes"]:
        lines.append(f"node {node['name']}: sync {node['syncStatus'] or '-'}, drain desired "
                     f"{node['drain']['desired'] or '-'} current {node['drain']['current'] or '-'}"
                     + (", cordoned" if node["drain"]["unschedulable"] else ""))
        if node.get("lastSyncError"):
            lines.append(paint(f"  last error: {node['lastSyncError']}", "red"))
        lines.extend(paint(f"  warning: {w}", "yellow") for w in node.get("warnings") or [])
        if node.get("missingKernelArgs"):
            lines.append("  kernel arguments missing (reboot): " + " ".join(node["missingKernelArgs"]))
        for key in ("note", "factsNote"):
            if node.get(key):
                lines.append(f"  note: {node[key]}")
        for pf in node["pfs"]:
            lines.append(f"  pf {pf['name']} {pf['pciAddress']} ({pf['vendor']}:{pf['deviceID']}), "
                         f"{pf['numVfs']}/{pf['totalvfs']} VFs, spec {pf['specVfs']} VFs: {_groups(pf['vfGroups'])}")
            for v in pf["policies"]:
                field = f" [{v['field']}]" if v.get("field") else ""
                lines.append(f"    {v['policy']} (priority {v['priority']}): {v['result']}{field}: {v['reason']}")
        for v in node.get("unselected", []):
            lines.append(f"  {v['policy']}: {v['reason']}")
    for note in report.get("notes", []):
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"
