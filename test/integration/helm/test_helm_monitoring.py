"""The chart's `monitoring.*` values render manifests/monitoring/ (off by default) in the chosen namespace.

Runs the real helm CLI (hack/build-helm.sh) and kubectl; no cluster.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from test.support.helm import CHART, KUBECTL, REPO, documents, helm, without_helm_labels

MONITORING_KINDS = {"PrometheusRule", "PodMonitor", "ServiceMonitor"}


def _render(*args: str) -> list[dict[str, Any]]:
    done = helm("template", "sriovop", str(CHART), *args)
    assert done.returncode == 0, done.stderr
    return documents(done.stdout)


def _monitoring(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] in MONITORING_KINDS
            or o["metadata"]["name"] == "sriov-network-operator-dashboard"]


def test_off_by_default() -> None:
    assert _monitoring(_render("--namespace", "sriov-network-operator")) == []


def test_on_renders_what_kubectl_kustomize_renders_in_the_release_namespace() -> None:
    kustomize = subprocess.run([str(KUBECTL), "kustomize", "manifests/monitoring"], capture_output=True,
                               text=True, cwd=REPO, timeout=120)
    assert kustomize.returncode == 0, kustomize.stderr
    expected = {(o["kind"], o["metadata"]["name"]): o for o in documents(kustomize.stdout)}
    values = ("monitoring.prometheusRule=true", "monitoring.podMonitors=true", "monitoring.dashboard=true")
    rendered = _monitoring(_render("--namespace", "ops", *(a for v in values for a in ("--set", v))))
    assert {o["metadata"]["namespace"] for o in rendered} == {"ops"}
    by_key = {(o["kind"], o["metadata"]["name"]): o for o in rendered}
    assert sorted(by_key) == sorted(expected)
    for k, obj in by_key.items():
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
        got = without_helm_labels(obj)
        got["metadata"]["namespace"] = expected[k]["metadata"]["namespace"]
        if k[0] == "ConfigMap":  # the dashboard: same JSON, whitespace aside
            assert json.loads(got["data"]["sriov-network-operator.json"]) == json.loads(
                expected[k]["data"]["sriov-network-operator.json"])
            assert got["metadata"]["labels"] == expected[k]["metadata"]["labels"]
        else:
            assert got == expected[k], k
