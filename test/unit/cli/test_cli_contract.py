"""What every people-facing command promises: one exit-code table, strict fields in files, one JSON
style, `--color auto|always|never`, and a demo that does not take over a directory it did not create.

Host: none (no cluster is reached: the kubeconfig given points nowhere, or nothing needs one)."""

from __future__ import annotations

import ast
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from sriovop import cli, exitcodes
from sriovop.commands._options import use_colour
from sriovop.demo.workdir import MARKER, DirectoryInUse, claim
from sriovop.jsonstyle import camel_keys
from sriovop.plan.render import render_plan
from sriovop.status import ClusterStatus, NodeStatus, PfStatus, render_text
from sriovop.status.drift import node_drift
from test.support.json_keys import all_keys
from test.support.unreachable import unreachable_kubeconfig

POLICY = """apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata: {name: p1}
spec:
  resourceName: r1
  %s: 4
  nicSelector: {pfNames: [ens1f0]}
  nodeSelector: {a: b}
"""


def _run(*args: str) -> click.testing.Result:
    return CliRunner().invoke(cli.main, list(args), prog_name="sriovop")


def test_the_table_has_one_meaning_per_code() -> None:
    assert set(exitcodes.EXIT_MEANINGS) == {0, 1, 2, 3}
    assert exitcodes.NoAnswer("x").exit_code == exitcodes.NO_ANSWER == 3


@pytest.mark.parametrize("command", ["plan", "explain", "status", "demo", "operator", "gen", "webhook"])
def test_every_help_prints_the_table(command: str) -> None:
    out = _run(command, "--help")
    assert out.exit_code == 0
    assert "Exit codes (every sriovop command):" in out.output
    for code, text in exitcodes.EXIT_MEANINGS.items():
        assert f"    {code}  {text}\n" in out.output


@pytest.mark.parametrize("args", [
    ["plan", "-f", "missing.yaml"],          # a missing file is no answer, never "disruptive" (click's 2)
    ["plan"],                                # a required option
    ["plan", "-f", "x", "--color", "blue"],  # a bad choice
    ["explain", "pod", "x"],
    ["status", "--bogus"],
    ["no-such-command"],
])
def test_usage_errors_exit_with_no_answer(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _run(*args)
    assert result.exit_code == exitcodes.NO_ANSWER, result.output


def test_an_unreachable_cluster_is_no_answer(tmp_path: Path) -> None:
    """An unusable kubeconfig, and an API server address that refuses connections."""
    empty, refusing = tmp_path / "empty", tmp_path / "refusing"
    empty.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    unreachable_kubeconfig(refusing)
    policy = tmp_path / "p.yaml"
    policy.write_text(POLICY % "numVfs")
    for kubeconfig in (empty, refusing):
        for args in (["status"], ["explain", "node", "n1"], ["plan", "-f", str(policy)]):
            result = _run(*args, "--kubeconfig", str(kubeconfig))
            assert result.exit_code == exitcodes.NO_ANSWER, (args, result.output)
            assert "cannot read the cluster" in result.output


def test_an_unknown_field_names_the_field_and_the_nearest_known_one(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(POLICY % "numVFs")
    result = _run("plan", "-f", str(path), "--kubeconfig", str(tmp_path / "nowhere"))
    assert result.exit_code == exitcodes.NO_ANSWER
    assert 'unknown field "spec.numVFs" (did you mean "spec.numVfs"?)' in result.output
    assert "Required" not in result.output


@pytest.mark.parametrize("command", ["plan", "explain", "status"])
def test_every_command_that_prints_for_people_takes_color(command: str) -> None:
    out = _run(command, "--help").output
    assert "--color [auto|always|never]" in out


def test_color_always_colours_a_pipe_and_never_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_colour("always") is True and use_colour("never") is False
    assert use_colour("auto") is False  # pytest's stdout is not a terminal
    plan = {"changes": [], "admission": {"mode": "none", "allowed": True, "message": "", "warnings": ["w"],
                                         "policies": [], "webhooks": []},
            "nodes": [], "pools": [], "errors": [], "notes": [], "exitCode": 0}
    assert "\x1b[" in render_plan(plan, colour=True) and "\x1b[" not in render_plan(plan, colour=False)


def test_status_json_and_text_carry_the_drift_warnings() -> None:
    spec = [{"pciAddress": "0000:3b:00.0", "numVfs": 4, "mtu": 1500}]
    host = [{"pciAddress": "0000:3b:00.0", "name": "ens1f0", "numVfs": 4, "mtu": 9000}]
    kept = node_drift(spec, host)
    warnings = kept.warnings
    assert len(warnings) == 1 and "mtu is 9000" in warnings[0] and "kept at 9000" in warnings[0]
    assert not kept.pending  # a kept MTU stays after a successful sync: nothing left to apply
    pending = node_drift([{"pciAddress": "0000:3b:00.0", "numVfs": 8}], host)
    assert pending.pending and any("numVfs: 4 -> 8" in w for w in pending.warnings)
    report = ClusterStatus("ns", [NodeStatus("w1", "Succeeded", "Idle", "Idle", "Idle", False, "",
                                             [PfStatus("ens1f0", "0000:3b:00.0", "m", 4, 8, 4, 9000, "ETH")],
                                             warnings)])
    data = report.to_json()
    assert data["nodes"][0]["syncStatus"] == "Succeeded" and data["nodes"][0]["pfs"][0]["pciAddress"]
    assert data["nodes"][0]["warnings"] == warnings
    assert not [k for k in all_keys(data) if "_" in k]
    assert "warning: pf ens1f0: mtu is 9000" in render_text(report)


def test_camel_keys() -> None:
    assert camel_keys({"pci_address": 1, "vf_groups": [{"device_type": "x"}], "syncStatus": 2}) == {
        "pciAddress": 1, "vfGroups": [{"deviceType": "x"}], "syncStatus": 2}


def test_demo_refuses_a_directory_it_did_not_create(tmp_path: Path) -> None:
    mine = tmp_path / "new"
    claim(mine)
    assert (mine / MARKER).exists()
    (mine / "logs").mkdir()
    claim(mine)  # its own directory is reused
    theirs = tmp_path / "home"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("keep me")
    with pytest.raises(DirectoryInUse, match="--reuse"):
        claim(theirs)
    result = _run("demo", "--dir", str(theirs), "--once")
    assert result.exit_code == exitcodes.NO_ANSWER and "not created by sriovop demo" in result.output
    claim(theirs, reuse=True)
    assert (theirs / "notes.txt").read_text() == "keep me"
    claim(tmp_path / "empty")  # an empty directory is fine


def _imports(package: Path) -> set[str]:
    found: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
    return found


def test_plan_and_webhook_share_the_policy_rules_and_import_neither_each_other() -> None:
    root = Path(cli.__file__).parent
    plan, webhook, rules = _imports(root / "plan"), _imports(root / "webhook"), _imports(root / "policyrules")
    assert not {m for m in plan if m.startswith("sriovop.webhook")}
    assert not {m for m in webhook if m.startswith("sriovop.plan")}
    assert not {m for m in rules if m.startswith(("sriovop.webhook", "sriovop.plan"))}
    assert "sriovop.policyrules.judge" in plan and "sriovop.policyrules.judge" in webhook
