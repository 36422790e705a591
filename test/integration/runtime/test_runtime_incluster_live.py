"""The in-cluster configuration against the shared real control plane: a service account's bound token
(TokenRequest) and the cluster CA in a service-account directory, as kubelet mounts them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sriovop.devcluster import ControlPlane
from sriovop.runtime import incluster
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import Forbidden
from sriovop.runtime.kinds import CONFIG_MAP, ROLE, ROLE_BINDING, SERVICE_ACCOUNT
from test.support.runtime_live import client_for, configmap


def mount_service_account(admin: Client, namespace: str, ca_file: Path, into: Path) -> None:
    admin.create(SERVICE_ACCOUNT, {"metadata": {"name": "reader"}}, namespace)
    admin.create(ROLE, {"metadata": {"name": "reader"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}, namespace)
    admin.create(ROLE_BINDING, {
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}]}, namespace)
    resp = admin.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/reader/token",
                         body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                               "spec": {"expirationSeconds": 3600}})
    into.mkdir()
    (into / "token").write_text(json.loads(resp.data)["status"]["token"])
    (into / "ca.crt").write_bytes(ca_file.read_bytes())


def test_service_account_token_reaches_the_api_server_with_its_rbac(
        control_plane: ControlPlane, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    admin = client_for(control_plane.kubeconfig)
    admin.create(CONFIG_MAP, configmap("seen", v="1"), namespace)
    mount_service_account(admin, namespace, control_plane.ca_file, tmp_path / "sa")
    monkeypatch.setattr(incluster, "SERVICE_ACCOUNT_DIR", tmp_path / "sa")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(control_plane.apiserver_port))
    rest = load_config()
    assert rest.source == "in-cluster"
    pod = Client(rest)
    try:
        assert [c["metadata"]["name"] for c in pod.list(CONFIG_MAP, namespace)] == ["seen"]
        with pytest.raises(Forbidden):  # authenticated as the service account, not as the admin
            pod.list(SERVICE_ACCOUNT, namespace)
    finally:
        pod.close()
        admin.close()
