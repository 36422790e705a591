"""The chart renders the same objects as `kubectl kustomize manifests/` (plus its uninstall hook), and its
values take effect.

Runs the real helm CLI (hack/build-helm.sh) and kubectl; no cluster.
"""

from __future__ import annotations

import base64
import subprocess
from typing import Any

from test.support.helm import CHART, KUBECTL, REPO, documents, helm, key, without_helm_labels

NS = "sriov-network-operator"


def _template(*args: str) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    done = helm("template", "sriovop", str(CHART), "--include-crds", *args)
    assert done.returncode == 0, done.stderr
    objects = documents(done.stdout)
    by_key = {key(o): o for o in objects}
    assert len(by_key) == len(objects), "an object is rendered twice"
    return by_key


def _env(deployment: dict[str, Any]) -> dict[str, str]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value", "") for e in container["env"] if "value" in e}


def test_default_values_render_exactly_the_kustomization() -> None:
    kustomize = subprocess.run([str(KUBECTL), "kustomize", "manifests/"], capture_output=True, text=True,
                               cwd=REPO, timeout=120)
    assert kustomize.returncode == 0, kustomize.stderr
    expected = {key(o): o for o in documents(kustomize.stdout)}
    rendered = _template("--namespace", NS, "--set", "namespace.create=true")
    hooks = sorted(k for k, o in rendered.items() if "helm.sh/hook" in (o["metadata"].get("annotations") or {}))
    assert [k[1] for k in hooks] == ["Job", "Role", "RoleBinding", "ServiceAccount"]  # the uninstall hook
    job = rendered[hooks[0]]["spec"]["template"]["spec"]["containers"][0]
    deployment = expected[("apps/v1", "Deployment", NS, "sriov-network-operator")]
    assert job["image"] == deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert job["command"][:2] == ["sriovop", "uninstall"]
    rendered = {k: o for k, o in rendered.items() if k not in hooks}
    assert sorted(rendered) == sorted(expected)
    for k, obj in rendered.items():
        labels = obj["metadata"].get("labels") or {}
        if k[1] != "CustomResourceDefinition":  # Helm installs crds/ as they are
            assert labels.get("app.kubernetes.io/managed-by") == "Helm", k
        assert without_helm_labels(obj) == expected[k], f"{k} differs from manifests/"


def test_values_set_namespace_replicas_images_and_certificate_mode() -> None:
    values = ("namespace.name=sriov", "operator.replicas=1", "images.operator=registry.example/op:1",
              "images.webhook=registry.example/wh:1", "images.rdmaCni=registry.example/rdma:1",
              "certificates.mode=cert-manager", "certificates.certLifetime=12h", "operatorConfig.create=false")
    rendered = _template("--namespace", "ops", *(a for v in values for a in ("--set", v)))
    namespaced = [o for o in rendered.values() if "namespace" in o["metadata"]]
    assert namespaced and {o["metadata"]["namespace"] for o in namespaced} == {"sriov"}
    subjects = [s for o in rendered.values() for s in o.get("subjects") or []]
    assert subjects and {s["namespace"] for s in subjects} == {"sriov"}
    # Without `default` there is nothing for the uninstall hook to delete.
    assert not [k for k in rendered if k[1] in ("Namespace", "SriovOperatorConfig", "Job")]
    deployment = rendered[("apps/v1", "Deployment", "sriov", "sriov-network-operator")]
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/op:1"
    env = _env(deployment)
    assert env["SRIOV_NETWORK_WEBHOOK_IMAGE"] == env["NETWORK_RESOURCES_INJECTOR_IMAGE"] == "registry.example/wh:1"
    assert env["RDMA_CNI_IMAGE"] == "registry.example/rdma:1" and "OVS_CNI_IMAGE" not in env
    assert env["ADMISSION_CONTROLLERS_CERTIFICATES_CERT_MANAGER_ENABLED"] == "true"
    assert env["CLUSTER_TYPE"] == "kubernetes"
    assert env["ADMISSION_CONTROLLERS_CERTIFICATES_CERT_LIFETIME"] == "12h"


def test_openshift_and_custom_certificate_modes() -> None:
    deployment = ("apps/v1", "Deployment", NS, "sriov-network-operator")
    env = _env(_template("--namespace", NS, "--set", "certificates.mode=openshift")[deployment])
    assert env["CLUSTER_TYPE"] == "openshift"
    assert env["ADMISSION_CONTROLLERS_CERTIFICATES_CERT_MANAGER_ENABLED"] == "false"
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    env = _env(_template("--namespace", NS, "--set", "certificates.mode=custom",
                         "--set-string", f"certificates.custom.operatorCa={pem}")[deployment])
    assert base64.b64decode(env["ADMISSION_CONTROLLERS_CERTIFICATES_OPERATOR_CA_CRT"]).decode() == pem
    assert env["CLUSTER_TYPE"] == "kubernetes"


def test_bad_values_fail_with_the_field_and_the_reason() -> None:
    for args, message in (
        (("--set", "certificates.mode=vault"), 'certificates.mode "vault": must be one of self-managed'),
        (("--set", "certificates.mode=custom"), "certificates.mode custom: set certificates.custom.operatorCa"),
        (("--set", "operator.replicas=0"), "operator.replicas 0: must be at least 1"),
    ):
        done = helm("template", "sriovop", str(CHART), "--namespace", NS, *args)
        assert done.returncode != 0 and message in done.stderr, (args, done.stderr)
