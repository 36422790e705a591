"""The helm CLI for the chart tests: built from the Go module proxy by hack/build-helm.sh (cached)."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from test.support.hack_build import hack_built

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "sriov-network-operator"
KUBECTL = REPO / ".venv" / "bin" / "kubectl"
#: Labels the chart adds to every object; everything else equals `kubectl kustomize manifests/`.
HELM_LABELS = ("app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart")


@functools.cache
def helm_binary() -> Path:
    """Build (first time: minutes) or find (cached: milliseconds) the helm binary."""
    return hack_built("build-helm.sh", "helm", timeout=1800)


def helm(*args: str, kubeconfig: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HELM_CACHE_HOME"] = env["HELM_CONFIG_HOME"] = env["HELM_DATA_HOME"] = str(REPO / "build" / "helm-home")
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    return subprocess.run([str(helm_binary()), *args], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=REPO)


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"]


def without_helm_labels(obj: dict[str, Any]) -> dict[str, Any]:
    meta = dict(obj["metadata"])
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in HELM_LABELS}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    return {**obj, "metadata": meta}
