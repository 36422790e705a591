"""`sriovop plan` and `sriovop explain` as a user runs them (the click commands, real kubeconfig), on the
plan cluster of three simulated SR-IOV hosts (test.support.plan_cluster) with the operator's controllers
and the config daemons running."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY
from sriovop.cli import main
from sriovop.plan.compute import compute_plan
from sriovop.plan.snapshot import read_snapshot
from test.support.daemon_harness import wait_for
from test.support.plan_cluster import Cluster, converged, pol, short

R1 = {"rack": "r1"}
POLICIES = [
    pol("x-hi", pf=["ens1f0"], prio=10, vfs=2, res="rx"),
    pol("x-lo", vendor="8086", prio=80, vfs=2, res="ry"),
    pol("x-r1", pf=["ens1f1"], prio=20, vfs=2, res="rz", sel=R1),
    pol("x-e810", deviceID="1593", prio=30, vfs=2, res="re"),
]


def _run(c: Cluster, kubeconfig: Path, *args: str) -> Any:
    return CliRunner().invoke(main, [*args, "--kubeconfig", str(kubeconfig), "-n", c.namespace],
                              catch_exceptions=False)


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
    assert bad.exit_code == 1 and "SriovNetworkNodePolicy" in bad.output and "nope does not exist" in bad.output

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
    assert f"node {n_a}: changes, disruption drain" in result.output
    assert "VFs 2 -> 6 (host has 2)" in result.output
    assert "exit code 2: would drain or reboot" in result.output
    spec = c.client.get(SRIOV_NETWORK_NODE_POLICY, "x-hi", c.namespace)["spec"]
    assert spec["numVfs"] == 2, "plan wrote nothing"

    denied = tmp_path / "denied.yaml"
    denied.write_text(yaml.safe_dump(pol("x-bad", pf=["ens1f0"], vfs=2, res="rb")))
    result = _run(c, kubeconfig, "plan", "-f", str(denied), "-o", "json")
    assert result.exit_code == 1
    plan = json.loads(result.output)
    assert plan["admission"]["allowed"] is False
    assert "overlapped with existing policy x-hi" in plan["admission"]["message"]

    result = _run(c, kubeconfig, "plan", "-f", str(same), "--delete")
    assert result.exit_code == 2 and "pf ens1f0 0000:18:00.0: reset" in result.output

    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    result = _run(c, kubeconfig, "plan", "-f", str(wrong))
    assert result.exit_code == 3 and "only sriovnetwork.openshift.io/v1 SriovNetworkNodePolicy" in result.output

    for policy in POLICIES:
        c.client.delete(SRIOV_NETWORK_NODE_POLICY, policy["metadata"]["name"], c.namespace)


def test_help_documents_every_flag() -> None:
    for command, flags in (("plan", ["--filename", "-f", "--delete", "--kubeconfig", "--namespace", "--output"]),
                           ("explain", ["--kubeconfig", "--namespace", "--output", "node", "policy"])):
        result = CliRunner().invoke(main, [command, "--help"])
        assert result.exit_code == 0
        for flag in flags:
            assert flag in result.output, (command, flag)
