"""`sriovop plan` and `sriovop explain` as a user runs them (the click commands, real kubeconfig), on the
plan cluster of three simulated SR-IOV hosts (test.support.plan_cluster) with the operator's controllers
and the config daemons running."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY, SRIOV_NETWORK_POOL_CONFIG
from sriovop.cli import main
from sriovop.plan.compute import compute_plan
from sriovop.plan.snapshot import read_snapshot
from test.support.kubectl import run_kubectl
from test.support.plan_cluster import Cluster, converged, pol, short
from test.support.poll import wait_for

R1 = {"rack": "r1"}
POLICIES = [
    pol("x-hi", pf=["ens1f0"], prio=10, vfs=2, res="rx"),
    pol("x-lo", vendor="8086", prio=80, vfs=2, res="ry"),
    pol("x-r1", pf=["ens1f1"], prio=20, vfs=2, res="rz", sel=R1),
    pol("x-e810", deviceID="1593", prio=30, vfs=2, res="re"),
]


@dataclass
class Run:
    exit_code: int
    output: str


def _run(c: Cluster, kubeconfig: Path, *args: str) -> Run:
    """The command as a user runs it: its own process (this one's threads log to stdout)."""
    proc = subprocess.run([sys.executable, "-m", "sriovop.cli", *args, "--kubeconfig", str(kubeconfig),
                           "-n", c.namespace], capture_output=True, text=True, timeout=120, check=False)
    return Run(proc.returncode, proc.stdout + proc.stderr)


def _converge(c: Cluster, policies: list[dict[str, Any]]) -> None:
    for policy in policies:
        c.client.create(SRIOV_NETWORK_NODE_POLICY, {**policy, "metadata": {"name": policy["metadata"]["name"],
                                                                          "namespace": c.namespace}}, c.namespace)

    def settled() -> bool:
        plan = compute_plan(read_snapshot(c.client, c.namespace), policies)
        return all(not n["changed"] and converged(c, n["name"], n) for n in plan["nodes"])
    wait_for(settled, 120, "the policies applied on every node")


def _node(c: Cluster, name: str) -> str:
    return next(n for n in c.sims if short(n) == name)


def test_plan_and_explain_commands(plan_cluster: Cluster, control_plane: Any, tmp_path: Path) -> None:
    c, kubeconfig = plan_cluster, control_plane.kubeconfig
    _converge(c, POLICIES)
    n_a, n_b, n_c = _node(c, "n-a"), _node(c, "n-b"), _node(c, "n-c")

    # explain node: every policy x PF, with the field that decided.
    result = _run(c, kubeconfig, "explain", "node", n_a, "-o", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    (node,) = report["nodes"]
    pfs = {pf["name"]: {v["policy"]: v for v in pf["policies"]} for pf in node["pfs"]}
    assert pfs["ens1f0"]["x-hi"]["result"] == "selected"
    assert pfs["ens1f0"]["x-lo"]["result"] == "taken" and pfs["ens1f0"]["x-lo"]["winner"] == "x-hi"
    assert "priority 10 of x-hi beats priority 80" in pfs["ens1f0"]["x-lo"]["reason"]
    assert pfs["ens1f0"]["x-e810"]["field"] == "deviceID"
    assert pfs["ens1f0"]["x-r1"]["field"] == "pfNames"
    assert pfs["ens2f0"]["x-lo"]["result"] == "selected"
    assert node["syncStatus"] == "Succeeded" and node["drain"] == {"desired": "Idle", "current": "Idle",
                                                                  "unschedulable": False}
    text = _run(c, kubeconfig, "explain", "node", n_b).output
    assert "x-r1: nodeSelector {'rack': 'r1'} does not match node" in text
    assert "x-lo (priority 80): taken [priority]: taken by x-hi" in text

    # explain policy: the policy on every node.
    report = json.loads(_run(c, kubeconfig, "explain", "policy", "x-e810", "-o", "json").output)
    selected = {(n["name"], pf["name"]) for n in report["nodes"] for pf in n["pfs"]
                for v in pf["policies"] if v["result"] == "selected"}
    assert selected == {(n_c, "ens1f1")}  # ens1f0 of n-c goes to x-hi (priority 10)
    bad = _run(c, kubeconfig, "explain", "policy", "nope")
    assert bad.exit_code == 3 and "SriovNetworkNodePolicy" in bad.output and "nope does not exist" in bad.output

    # plan: exit codes 0 (no change), 2 (drain), 1 (denied); nothing is written.
    same = tmp_path / "same.yaml"
    same.write_text(yaml.safe_dump_all(POLICIES))
    result = _run(c, kubeconfig, "plan", "-f", str(same), "-o", "json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert (plan["admission"]["allowed"], plan["admission"]["message"], plan["admission"]["warnings"]) == (True, "", [])
    assert [n["changed"] for n in plan["nodes"]] == [False, False, False]

    more = tmp_path / "more.yaml"
    more.write_text(yaml.safe_dump(pol("x-hi", pf=["ens1f0"], prio=10, vfs=6, res="rx")))
    result = _run(c, kubeconfig, "plan", "-f", str(more))
    assert result.exit_code == 2, result.output
    assert f"node {n_a}: changes, disruption drain (evicts the pods using SR-IOV resources)" in result.output
    assert "VFs 2 -> 6 (host has 2)" in result.output
    assert "exit code 2: plan: admissible, and at least one node would drain or reboot" in result.output
    spec = c.client.get(SRIOV_NETWORK_NODE_POLICY, "x-hi", c.namespace)["spec"]
    assert spec["numVfs"] == 2, "plan wrote nothing"

    # No policy webhook on this cluster: what it would deny is a warning, and the exit code follows
    # disruption only.
    denied = tmp_path / "denied.yaml"
    denied.write_text(yaml.safe_dump(pol("x-bad", pf=["ens1f0"], vfs=2, res="rb")))
    result = _run(c, kubeconfig, "plan", "-f", str(denied), "-o", "json")
    plan = json.loads(result.output)
    assert plan["admission"]["mode"] == "none" and plan["admission"]["allowed"] is True
    assert result.exit_code == (2 if any(n["disruption"] != "none" for n in plan["nodes"]) else 0)
    (verdict,) = plan["admission"]["policies"]
    assert verdict["wouldDeny"]["field"] == "spec.nicSelector.pfNames[0]", verdict
    assert "overlapped with existing policy x-hi" in verdict["wouldDeny"]["reason"]
    assert any("x-bad" in w and "spec.nicSelector.pfNames[0]" in w for w in plan["admission"]["warnings"])

    result = _run(c, kubeconfig, "plan", "-f", str(same), "--delete")
    assert result.exit_code == 2 and "pf ens1f0 0000:18:00.0: reset" in result.output

    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    result = _run(c, kubeconfig, "plan", "-f", str(wrong))
    assert result.exit_code == 3 and "only sriovnetwork.openshift.io/v1 SriovNetworkNodePolicy" in result.output

    for policy in POLICIES:
        c.client.delete(SRIOV_NETWORK_NODE_POLICY, policy["metadata"]["name"], c.namespace)
    _settle_empty(c)


def _status(c: Cluster, kind: Any, name: str) -> dict[str, Any]:
    return c.client.get(kind, name, c.namespace).get("status") or {}


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {x["type"]: (x["status"], x["reason"], x["message"]) for x in status.get("conditions") or []}


def _settle_empty(c: Cluster) -> None:
    for node in c.sims:
        wait_for(lambda n=node: converged(c, n, {"spec": {"interfaces": []}}), 120, f"{node} back to no VFs")


def test_status_on_policies_and_pools(plan_cluster: Cluster, control_plane: Any) -> None:
    """The operator's policy-status controller: counts, conditions naming failing nodes, printer columns."""
    c = plan_cluster
    _converge(c, POLICIES)
    n_a = _node(c, "n-a")
    c.client.create(SRIOV_NETWORK_POOL_CONFIG, {"metadata": {"name": "ab", "namespace": c.namespace}, "spec": {
        "nodeSelector": {"matchLabels": {"pool": "ab"}}, "maxUnavailable": 1}}, c.namespace)

    def ready(name: str, matched: int) -> dict[str, Any] | None:
        st = _status(c, SRIOV_NETWORK_NODE_POLICY, name)
        ok = (st.get("matchedNodes"), st.get("readyNodes")) == (matched, matched) and \
            _conditions(st).get("Ready", ("",))[0] == "True"
        return st if ok else None
    st = wait_for(lambda: ready("x-hi", 3), 60, "x-hi status")
    assert _conditions(st)["Progressing"][:2] == ("False", "Idle")
    assert _conditions(st)["Degraded"][:2] == ("False", "NoFailures")
    wait_for(lambda: ready("x-r1", 1), 60, "x-r1 status (rack r1 only)")
    pool = wait_for(lambda: (p := _status(c, SRIOV_NETWORK_POOL_CONFIG, "ab")).get("nodeCount") == 2 and p, 60,
                    "pool status")
    assert not pool.get("drainingNodes") and _conditions(pool)["Ready"][0] == "True"

    # kubectl shows the status as printer columns.
    out = run_kubectl(control_plane.kubeconfig, "get", "sriovnetworknodepolicies", "-n", c.namespace)
    header, *rows = out.stdout.splitlines()
    assert header.split() == ["NAME", "MATCHED", "READY", "NODES", "READY", "DEGRADED", "AGE"], out.stdout
    assert any(r.split()[:5] == ["x-hi", "3", "3", "True", "False"] for r in rows), out.stdout

    # 8 VFs on an 82576 (7 at most), applied without the webhook: n-a fails, and the status says so.
    c.client.create(SRIOV_NETWORK_NODE_POLICY, {**pol("x-8", pf=["ens2f0"], prio=1, vfs=8, res="r8", sel=R1),
                                                "metadata": {"name": "x-8", "namespace": c.namespace}}, c.namespace)

    def degraded() -> tuple[str, str, str] | None:
        cond = _conditions(_status(c, SRIOV_NETWORK_NODE_POLICY, "x-8")).get("Degraded")
        return cond if cond and cond[0] == "True" else None
    _, reason, message = wait_for(degraded, 60, "x-8 Degraded")
    assert reason == "NodesFailed" and n_a in message and "sriov_totalvfs 7" in message, message
    st = _status(c, SRIOV_NETWORK_NODE_POLICY, "x-8")
    assert (st["matchedNodes"], st["readyNodes"]) == (1, 0)
    assert _conditions(st)["Ready"][:2] == ("False", "NodesNotReady")

    for name in ["x-8", *(p["metadata"]["name"] for p in POLICIES)]:
        c.client.delete(SRIOV_NETWORK_NODE_POLICY, name, c.namespace)
    c.client.delete(SRIOV_NETWORK_POOL_CONFIG, "ab", c.namespace)
    _settle_empty(c)


def test_help_documents_every_flag() -> None:
    for command, flags in (("plan", ["--filename", "-f", "--delete", "--kubeconfig", "--namespace", "--output"]),
                           ("explain", ["--kubeconfig", "--namespace", "--output", "node", "policy"])):
        result = CliRunner().invoke(main, [command, "--help"])
        assert result.exit_code == 0
        for flag in flags:
            assert flag in result.output, (command, flag)
