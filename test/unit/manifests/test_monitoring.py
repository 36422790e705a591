"""The opt-in monitoring (manifests/monitoring/, the chart's `monitoring.*`) names only series sriovop
exports, has the alerts users expect, and docs/monitoring.md lists exactly the series the code registers.

Host: none (files of the repository and the process's own prometheus-client registry).
Prometheus' own checks of the rules (`promtool check rules`, `promtool test rules`) are in
test/integration/manifests/test_monitoring_promtool.py: promtool is a Go build (`make promtool`), and the
unit suite needs none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import REGISTRY

import sriovop.operator.metrics
import sriovop.runtime.events
import sriovop.runtime.leaderelection.metrics
import sriovop.webhook.certmetrics
import sriovop.webhook.freshness
import sriovop.webhook.handler
from test.support.metric_inventory import families, series_names

ROOT = Path(__file__).resolve().parents[3]
MONITORING = ROOT / "manifests" / "monitoring"
CHART = ROOT / "deploy" / "helm" / "sriov-network-operator"
_ = (sriovop.operator.metrics, sriovop.runtime.events, sriovop.runtime.leaderelection.metrics,
     sriovop.webhook.certmetrics, sriovop.webhook.freshness, sriovop.webhook.handler)

#: PromQL words that look like metric names but are not.
_PROMQL = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
           "offset", "time", "vector", "rate", "irate", "increase", "sum", "max", "min", "avg", "count",
           "histogram_quantile", "label_replace", "absent", "le", "inf"}


def _rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    return [r for g in doc["spec"]["groups"] for r in g["rules"]]


def _panel_exprs() -> list[str]:
    dash = json.loads((MONITORING / "dashboard.json").read_text())
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", ())]


def metric_names(expr: str) -> set[str]:
    """Identifiers of a PromQL expression that name series (label names, strings and functions removed)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)          # string literals
    expr = re.sub(r"\{[^}]*\}", "", expr)                     # label matchers
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)                    # range selectors
    words = {m.group() for m in re.finditer(r"(?<![\w.])[a-zA-Z_:][a-zA-Z0-9_:]*", expr)
             if not expr[m.end():].lstrip().startswith("(")}  # a word before "(" is a function
    return {w for w in words if w.lower() not in _PROMQL}


def _balanced(expr: str) -> bool:
    depth = {"(": 0, "{": 0, "[": 0}
    pairs = {")": "(", "}": "{", "]": "["}
    for ch in re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr):
        if ch in depth:
            depth[ch] += 1
        elif ch in pairs:
            depth[pairs[ch]] -= 1
            if depth[pairs[ch]] < 0:
                return False
    return not any(depth.values())


def test_metric_name_extraction() -> None:
    assert metric_names('sum by (node) (rate(sriov_vf_rx_bytes{pf="ens1f0"}[5m])) > on (node) x_total') == {
        "sriov_vf_rx_bytes", "x_total"}


def test_the_alerts_users_expect_exist_and_are_complete() -> None:
    rules = {r["alert"]: r for r in _rules()}
    assert set(rules) == {"SriovNodeSyncFailed", "SriovNodeDrainStuck", "SriovWebhookCertificateNearExpiry",
                          "SriovOperatorNoLeader", "SriovVfPoolExhausted"}
    for name, rule in rules.items():
        assert re.fullmatch(r"\d+[smh]", rule["for"]), name
        assert rule["labels"]["severity"] in ("info", "warning", "critical"), name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
        assert _balanced(rule["expr"]), name


def test_every_series_an_alert_or_a_panel_names_is_exported() -> None:
    exported = series_names()
    exprs = [r["expr"] for r in _rules()] + _panel_exprs()
    assert len(exprs) > 20
    unknown = {(name, e) for e in exprs for name in metric_names(e) if name not in exported}
    assert not unknown, f"not exported by sriovop: {sorted(unknown)}"
    for expr in exprs:
        assert _balanced(expr), expr
        for name in re.findall(r"rate\(([a-z_:]+)", expr):
            kind = families().get(name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count"))
            assert kind in ("counter", "histogram", "summary"), f"rate() of a {kind}: {expr}"
        for name in re.findall(r"histogram_quantile\([^,]+,.*?\(rate\(([a-z_:]+)", expr):
            assert name.endswith("_bucket"), expr


def test_inventory_covers_what_the_registry_holds() -> None:
    families_found = families()
    live = set()
    for metric in REGISTRY.collect():
        if metric.name.startswith(("python_", "process_")):
            continue
        live.add(f"{metric.name}_total" if metric.type == "counter" else metric.name)
    missing = live - set(families_found)
    assert not missing, f"registered but not in the inventory: {sorted(missing)}"
    assert {"sriovop_node_state_sync_status", "sriovop_webhook_certificate_expiry_timestamp_seconds",
            "leader_election_master_status"} <= live


def test_docs_list_exactly_the_exported_series() -> None:
    text = (ROOT / "docs" / "monitoring.md").read_text()
    section = text.split("## Metrics", 1)[1].split("\n## ", 1)[0]
    documented = dict(re.findall(r"^\| `([a-z_:]+)` \| (\w+) \|", section, re.M))
    assert documented == families(), "docs/monitoring.md's metric table differs from what the code exports"


def test_monitoring_is_opt_in_in_manifests_and_the_chart() -> None:
    base = yaml.safe_load((ROOT / "manifests" / "kustomization.yaml").read_text())
    assert not any("monitoring" in r for r in base["resources"])
    kustom = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    assert sorted(kustom["resources"]) == sorted(p.name for p in MONITORING.glob("*.yaml")
                                                 if p.name != "kustomization.yaml")
    assert kustom["configMapGenerator"][0]["options"]["labels"] == {"grafana_dashboard": "1"}
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["monitoring"] == {"prometheusRule": False, "podMonitors": False, "dashboard": False}
    for name in ("prometheusrule.yaml", "podmonitors.yaml", "dashboard.json"):
        assert (CHART / "files" / "monitoring" / name).read_bytes() == (MONITORING / name).read_bytes()
