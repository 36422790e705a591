"""`kubectl apply -k manifests/` against a real API server (RBAC on), following manifests/README.md.

A private control plane: the test installs the CRDs and the operator namespace, which the shared one
must not get as a side effect.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from sriovop.devcluster import ControlPlane
from test.support.kubectl import run_kubectl


def _kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_kubectl(kubeconfig, *args, timeout=120, check=False)


def test_kustomization_applies_in_the_documented_order(private_control_plane: ControlPlane) -> None:
    kubeconfig = private_control_plane.kubeconfig
    # Why the README says two steps: without the CRDs, the SriovOperatorConfig cannot be mapped.
    at_once = _kubectl(kubeconfig, "apply", "-k", "manifests/", "--dry-run=server")
    assert at_once.returncode != 0
    assert "SriovOperatorConfig" in at_once.stderr and "ensure CRDs are installed first" in at_once.stderr, \
        at_once.stderr
    # The documented order: CRDs on their own, the namespace (a dry run does not create it), the rest.
    crds = _kubectl(kubeconfig, "apply", "-k", "manifests/crds")
    assert crds.returncode == 0, crds.stderr
    assert _kubectl(kubeconfig, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s").returncode == 0
    ns = _kubectl(kubeconfig, "apply", "-f", "manifests/namespace.yaml")
    assert ns.returncode == 0, ns.stderr
    run = _kubectl(kubeconfig, "apply", "-k", "manifests/", "--dry-run=server")
    assert run.returncode == 0, run.stdout + run.stderr
    applied = {line.split(" ")[0] for line in run.stdout.splitlines()}
    for expected in (
        "deployment.apps/sriov-network-operator",
        "poddisruptionbudget.policy/sriov-network-operator",
        "clusterrole.rbac.authorization.k8s.io/sriov-network-operator",
        "role.rbac.authorization.k8s.io/sriov-network-config-daemon",
        "rolebinding.rbac.authorization.k8s.io/sriov-network-webhook",
        "serviceaccount/operator-webhook-sa",
        "configmap/supported-nic-ids",
        "sriovoperatorconfig.sriovnetwork.openshift.io/default",
    ):
        assert expected in applied, f"{expected} not in kubectl's output:\n{run.stdout}"
    # And for real: everything is accepted, including the default SriovOperatorConfig.
    real = _kubectl(kubeconfig, "apply", "-k", "manifests/")
    assert real.returncode == 0, real.stdout + real.stderr
    got = _kubectl(kubeconfig, "get", "sriovoperatorconfig", "default", "-n", "sriov-network-operator",
                   "-o", "jsonpath={.spec.enableOperatorWebhook}")
    assert got.stdout == "true", got.stderr
