"""`helm install` of the chart on the 2-node dev cluster: the operator runs as a pod, creates its webhook
certificates, both admission servers serve from DaemonSet pods on the control-plane node, and
`helm uninstall` (its pre-delete hook) removes the webhook configurations with the operator's help.

Host: this machine (kubelets, containerd and pod bridges), not the simulated SR-IOV host nor the QEMU
guest. The images are `make images`' archives (built here if missing, layers cached), imported into
every node. Everything is real: the operator Deployment, the webhook DaemonSets it renders, the
Secrets it writes, and kube-apiserver calling the webhook pods through their Services.
"""

from __future__ import annotations

import base64
import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from sriovop.api.v1.kinds import (
    NETWORK_ATTACHMENT_DEFINITION,
    SRIOV_NETWORK,
    SRIOV_NETWORK_POOL_CONFIG,
    SRIOV_OPERATOR_CONFIG,
)
from sriovop.controllers.webhook_certs import pki
from sriovop.devcluster.images.build import build_images
from sriovop.devcluster.images.load import load_archives
from sriovop.render import workloads
from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.runtime.kinds import (
    DAEMON_SET,
    MUTATING_WEBHOOK_CONFIGURATION,
    NAMESPACE,
    POD,
    SECRET,
    VALIDATING_WEBHOOK_CONFIGURATION,
)
from test.support.cluster import POD_TIMEOUT_S, ClusterNodes
from test.support.helm import CHART, helm
from test.support.poll import wait_for

NS = "sriov-network-operator"
CONFIGS = ((VALIDATING_WEBHOOK_CONFIGURATION, "sriov-operator-webhook-config"),
           (MUTATING_WEBHOOK_CONFIGURATION, "sriov-operator-webhook-config"),
           (MUTATING_WEBHOOK_CONFIGURATION, "network-resources-injector-config"))


@pytest.fixture
def installed(cluster_nodes: ClusterNodes, kube: Client) -> Iterator[Client]:
    archives = build_images()
    load_archives(cluster_nodes.dir, sorted(archives.values()))
    done = helm("install", "sriovop", str(CHART), "--namespace", NS, "--create-namespace",
                "--set", "operator.replicas=2", "--wait", "--timeout", f"{int(POD_TIMEOUT_S)}s",
                kubeconfig=cluster_nodes.kubeconfig, timeout=POD_TIMEOUT_S + 60)
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        yield kube
    finally:
        # Normally the test uninstalled already; after a failure, leave the session's cluster clean.
        helm("uninstall", "sriovop", "--namespace", NS, "--no-hooks", "--ignore-not-found",
             kubeconfig=cluster_nodes.kubeconfig, timeout=240)
        for kind, name in CONFIGS:
            with contextlib.suppress(NotFound):
                kube.delete(kind, name)
        with contextlib.suppress(NotFound):
            kube.patch(SRIOV_OPERATOR_CONFIG, "default", {"metadata": {"finalizers": None}}, NS)
        with contextlib.suppress(NotFound):
            kube.delete(NAMESPACE, NS)


def _ready_daemonset(kube: Client, name: str) -> dict[str, Any] | None:
    try:
        ds = kube.get(DAEMON_SET, name, NS)
    except NotFound:
        return None
    status = ds.get("status") or {}
    want = status.get("desiredNumberScheduled", 0)
    return dict(ds) if want >= 1 and status.get("numberReady") == want else None


def _bundle(kube: Client, kind: Any, name: str) -> list[Any]:
    try:
        hooks = kube.get(kind, name)["webhooks"]
    except NotFound:
        return []
    return pki.parse_bundle(base64.b64decode(hooks[0]["clientConfig"].get("caBundle") or ""))


def test_helm_install_runs_the_operator_and_its_webhooks_with_self_managed_certificates(
        cluster_nodes: ClusterNodes, installed: Client, node_namespace: str) -> None:
    kube = installed
    for name in (workloads.OPERATOR_WEBHOOK_NAME, workloads.INJECTOR_NAME):
        wait_for(lambda n=name: _ready_daemonset(kube, n), timeout=POD_TIMEOUT_S,  # type: ignore[misc]
                 what=f"DaemonSet {name} ready")
        pods = kube.list(POD, NS, label_selector={"app": name})
        # Only the control-plane node runs admission servers.
        assert [p["spec"]["nodeName"] for p in pods] == ["sriovop-node-1"], name
    ca = x509_of(kube, "sriov-network-operator-webhook-ca", "tls.crt")
    for kind, name in CONFIGS:
        wait_for(lambda k=kind, n=name: pki.contains(_bundle(kube, k, n), ca), timeout=60,  # type: ignore[misc]
                 what=f"the operator's CA in {kind.kind} {name}")
    serving = x509_of(kube, "operator-webhook-cert", "tls.crt")
    assert pki.signed_by(serving, ca) and pki.dns_names(serving)[0] == f"operator-webhook-service.{NS}.svc"

    # kube-apiserver calls the webhook pod: an invalid object is denied by it, a valid one admitted.
    bad = {"metadata": {"name": f"bad-{uuid.uuid4().hex[:6]}", "namespace": NS}, "spec": {"maxUnavailable": "x%"}}
    with pytest.raises(ApiError, match=r'admission webhook "operator-webhook\.sriovnetwork\.openshift\.io" denied'):
        kube.create(SRIOV_NETWORK_POOL_CONFIG, bad)
    network = {"metadata": {"name": "helm-net", "namespace": NS}, "spec": {
        "resourceName": "intelnics", "networkNamespace": node_namespace, "vlan": 100,
        "ipam": '{"type": "host-local", "subnet": "10.56.217.0/24"}'}}
    kube.create(SRIOV_NETWORK, network)
    try:
        nad = wait_for(lambda: _get(kube, NETWORK_ATTACHMENT_DEFINITION, "helm-net", node_namespace),
                       timeout=120, what="the NAD rendered by the operator pod")
        assert '"vlan":100' in nad["spec"]["config"].replace(" ", "")
    finally:
        kube.delete(SRIOV_NETWORK, "helm-net", NS)  # its finalizer needs the operator: before uninstall
        wait_for(lambda: _get(kube, SRIOV_NETWORK, "helm-net", NS) is None, timeout=120,
                 what="the SriovNetwork deleted")

    # helm uninstall runs the pre-delete hook (sriovop uninstall) while the operator still runs: no
    # webhook configuration and no `default` is left behind.
    done = helm("uninstall", "sriovop", "--namespace", NS, "--wait", "--timeout", "240s",
                kubeconfig=cluster_nodes.kubeconfig, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    for kind, name in CONFIGS:
        assert _get(kube, kind, name, None) is None, f"{kind.kind} {name} left behind"
    assert _get(kube, SRIOV_OPERATOR_CONFIG, "default", NS) is None


def _get(kube: Client, kind: Any, name: str, namespace: str | None) -> dict[str, Any] | None:
    try:
        return dict(kube.get(kind, name, namespace))
    except NotFound:
        return None


def x509_of(kube: Client, secret: str, key: str) -> Any:
    data = wait_for(lambda: (_get(kube, SECRET, secret, NS) or {}).get("data"), timeout=120,
                    what=f"Secret {secret}")
    return pki.parse_bundle(base64.b64decode(data[key]))[0]
