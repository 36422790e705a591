"""manifests/monitoring's PrometheusRule is valid for Prometheus itself, and its alerts fire when they should.

Runs the real promtool (hack/get-promtool.sh; a missing or failed fetch fails these tests) on the rule
groups of the PrometheusRule: `promtool check rules` parses every expression and template as Prometheus
does, and `promtool test rules` evaluates the alerts over synthetic series. No cluster, no host.
test/unit/manifests/test_monitoring.py checks that the series they name are the ones sriovop exports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from test.support.promtool import REPO, promtool

RULE = REPO / "manifests" / "monitoring" / "prometheusrule.yaml"


def _write_groups(directory: Path, groups: list[dict[str, Any]]) -> Path:
    """A PrometheusRule's spec is a Prometheus rule file (its `groups`); promtool reads that form."""
    path = directory / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


def _shipped_groups() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULE.read_text())
    assert doc["kind"] == "PrometheusRule"
    groups: list[dict[str, Any]] = doc["spec"]["groups"]
    return groups


def test_promtool_accepts_every_rule(tmp_path: Path) -> None:
    rules = _write_groups(tmp_path, _shipped_groups())
    done = promtool("check", "rules", str(rules), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    count = sum(len(g["rules"]) for g in _shipped_groups())
    assert f"SUCCESS: {count} rules found" in done.stdout + done.stderr


def test_promtool_rejects_a_broken_expression(tmp_path: Path) -> None:
    """The check can fail: an unbalanced expression in an otherwise shipped group is refused."""
    groups = _shipped_groups()
    groups[0]["rules"][0] = {**groups[0]["rules"][0], "expr": "max by (node) (sriovop_node_state_sync_status"}
    done = promtool("check", "rules", str(_write_groups(tmp_path, groups)), cwd=tmp_path)
    assert done.returncode != 0 and "SriovNodeSyncFailed" in done.stdout + done.stderr


def test_sync_failed_and_no_leader_fire_after_their_for(tmp_path: Path) -> None:
    """The two alerts users rely on most, evaluated by Prometheus' rule engine: a node Failed for 10 min
    fires SriovNodeSyncFailed (not before), and no replica holding the lease fires SriovOperatorNoLeader."""
    _write_groups(tmp_path, _shipped_groups())
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": 'sriovop_node_state_sync_status{node="worker-1",status="Failed"}', "values": "1x20"},
                {"series": 'sriovop_node_state_sync_status{node="worker-2",status="Failed"}', "values": "0x20"},
                {"series": 'leader_election_master_status{name="a56def2a.openshift.io",pod="op-0"}',
                 "values": "0x20"},
            ],
            "alert_rule_test": [
                {"eval_time": "5m", "alertname": "SriovNodeSyncFailed", "exp_alerts": []},
                {"eval_time": "11m", "alertname": "SriovNodeSyncFailed", "exp_alerts": [
                    {"exp_labels": {"node": "worker-1", "severity": "warning"},
                     "exp_annotations": {
                         "summary": "SR-IOV configuration of node worker-1 failed",
                         "description": _annotation("SriovNodeSyncFailed", "description", node="worker-1")}},
                ]},
                {"eval_time": "11m", "alertname": "SriovOperatorNoLeader", "exp_alerts": [
                    {"exp_labels": {"severity": "critical"},
                     "exp_annotations": {
                         "summary": "No sriov-network-operator replica is leading",
                         "description": _annotation("SriovOperatorNoLeader", "description")}},
                ]},
            ],
        }],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    done = promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def _annotation(alert: str, key: str, **labels: str) -> str:
    """The shipped annotation with its `{{ $labels.X }}` filled in, as Prometheus expands it."""
    [rule] = [r for g in _shipped_groups() for r in g["rules"] if r.get("alert") == alert]
    text: str = rule["annotations"][key]
    for name, value in labels.items():
        text = text.replace(f"{{{{ $labels.{name} }}}}", value)
    return text
