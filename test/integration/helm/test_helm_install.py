"""`helm install` of the chart creates the objects of manifests/, `helm uninstall` removes them.

A private control plane (kube-apiserver + etcd, no nodes): the chart installs cluster-scoped objects
(CRDs, ClusterRoles, a Namespace) that the shared one must not get. Object creation only; the
operator's pods need nodes (the dev cluster with --nodes).
"""

from __future__ import annotations

from sriovop.api.v1.kinds import SRIOV_OPERATOR_CONFIG
from sriovop.devcluster import ControlPlane
from sriovop.runtime import kinds as core
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import NotFound
from test.support.helm import CHART, helm
from test.support.poll import wait_for

NS = "sriov-network-operator"
#: A sample of what the chart installs: (kind, name, namespaced).
OBJECTS = (
    (core.DEPLOYMENT, "sriov-network-operator", True), (core.POD_DISRUPTION_BUDGET, "sriov-network-operator", True),
    (core.SERVICE_ACCOUNT, "operator-webhook-sa", True), (core.ROLE, "sriov-network-operator", True),
    (core.ROLE_BINDING, "sriov-network-operator", True), (core.CONFIG_MAP, "supported-nic-ids", True),
    (SRIOV_OPERATOR_CONFIG, "default", True), (core.CLUSTER_ROLE, "sriov-network-operator", False),
    (core.CLUSTER_ROLE_BINDING, "sriov-network-operator", False),
)


def _exists(client: Client, kind: core.Kind, name: str, namespace: str | None) -> bool:
    try:
        client.get(kind, name, namespace)
    except NotFound:
        return False
    return True


def test_install_creates_the_objects_and_uninstall_removes_them(private_control_plane: ControlPlane) -> None:
    kubeconfig = private_control_plane.kubeconfig
    client = Client(load_config(str(kubeconfig)))
    # The documented way: Helm creates the namespace; CRDs come first from crds/, so one call suffices.
    # No --wait: without nodes the operator's pods never run.
    done = helm("install", "sriovop", str(CHART), "--namespace", NS, "--create-namespace",
                "--set", "operator.replicas=2", kubeconfig=kubeconfig)
    assert done.returncode == 0, done.stdout + done.stderr
    for kind, name, namespaced in OBJECTS:
        assert _exists(client, kind, name, NS if namespaced else None), (kind.kind, name)
    assert client.get(core.DEPLOYMENT, "sriov-network-operator", NS)["spec"]["replicas"] == 2
    crd = client.get(core.CUSTOM_RESOURCE_DEFINITION, "sriovnetworknodepolicies.sriovnetwork.openshift.io")
    assert any(c["type"] == "Established" and c["status"] == "True" for c in crd["status"]["conditions"])
    listed = helm("list", "--namespace", NS, "--short", kubeconfig=kubeconfig)
    assert listed.stdout.split() == ["sriovop"], listed.stdout + listed.stderr

    # --no-hooks: the pre-delete hook is a Job, and this control plane has no node to run it
    # (test/integration/cluster/test_helm_cluster.py runs it).
    done = helm("uninstall", "sriovop", "--namespace", NS, "--wait", "--timeout", "120s", "--no-hooks",
                kubeconfig=kubeconfig)
    assert done.returncode == 0, done.stdout + done.stderr
    for kind, name, namespaced in OBJECTS:
        wait_for(lambda k=kind, n=name, ns=namespaced: not _exists(
            client, k, n, NS if ns else None), 120.0, f"{kind.kind} {name} deleted")
    # Helm never deletes CRDs (that would delete every SR-IOV object in the cluster).
    assert _exists(client, core.CUSTOM_RESOURCE_DEFINITION, "sriovnetworks.sriovnetwork.openshift.io", None)

    # namespace.create: the chart's own Namespace with the Pod Security labels, removed on uninstall.
    done = helm("install", "sriovop", str(CHART), "--namespace", "default", "--set", "namespace.create=true",
                "--set", f"namespace.name={NS}-2", kubeconfig=kubeconfig)
    assert done.returncode == 0, done.stdout + done.stderr
    labels = client.get(core.NAMESPACE, f"{NS}-2")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert _exists(client, core.DEPLOYMENT, "sriov-network-operator", f"{NS}-2")
    # No --wait: without kube-controller-manager a deleted Namespace stays Terminating.
    done = helm("uninstall", "sriovop", "--namespace", "default", "--no-hooks", kubeconfig=kubeconfig)
    assert done.returncode == 0, done.stdout + done.stderr
    wait_for(lambda: not _exists(client, core.NAMESPACE, f"{NS}-2", None)
                or client.get(core.NAMESPACE, f"{NS}-2").get("status", {}).get("phase") == "Terminating",
             120.0, "the chart's namespace deleted")
