"""Least-privilege identities for the demo: each component runs as its own ServiceAccount.

Each component gets a real ServiceAccount token (TokenRequest API, signed by the control plane's
service-account key), so the API server authenticates it as `system:serviceaccount:<ns>:<name>` in the
groups `system:serviceaccounts` and `system:serviceaccounts:<ns>`, exactly as a pod's projected token.
(A client certificate cannot carry these names: X.509 limits a common name to 64 characters, and
`system:serviceaccount:sriov-network-operator:sriov-network-config-daemon` is 72.) The roles are the
deployment manifests' own (manifests/rbac/), so a demo that converges this way shows they suffice.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import yaml

from sriovop.devcluster.bootstrap import apply_documents, load_documents
from sriovop.render.workloads import CONFIG_DAEMON_SERVICE_ACCOUNT, OPERATOR_WEBHOOK_SERVICE_ACCOUNT
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import SERVICE_ACCOUNT

OPERATOR_SERVICE_ACCOUNT = "sriov-network-operator"
#: Long enough for a demo left running for a day; the API server caps it if configured to.
TOKEN_LIFETIME_SECONDS = 86400


@dataclass(frozen=True)
class Component:
    """A demo component and the ServiceAccount its Deployment/DaemonSet runs under."""

    name: str
    service_account: str


OPERATOR = Component("operator", OPERATOR_SERVICE_ACCOUNT)
WEBHOOK = Component("webhook", OPERATOR_WEBHOOK_SERVICE_ACCOUNT)
CONFIG_DAEMON = Component("config-daemon", CONFIG_DAEMON_SERVICE_ACCOUNT)
COMPONENTS: tuple[Component, ...] = (OPERATOR, WEBHOOK, CONFIG_DAEMON)


class KubeconfigWriter(Protocol):
    """What sriovop.devcluster.ControlPlane offers: its URL, CA and a directory to write into."""

    @property
    def url(self) -> str: ...
    @property
    def ca_pem(self) -> bytes: ...
    @property
    def dir(self) -> Path: ...


def service_account_user(namespace: str, service_account: str) -> str:
    return f"system:serviceaccount:{namespace}:{service_account}"


def service_account_groups(namespace: str) -> list[str]:
    return ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]


def install_rbac(client: Client, rbac_dir: Path) -> list[str]:
    """Apply every ServiceAccount, (Cluster)Role and binding in `rbac_dir` (the deployment's own)."""
    return apply_documents(client, load_documents(sorted(rbac_dir.glob("*.yaml"))))


def request_token(client: Client, namespace: str, service_account: str,
                  expiration_seconds: int = TOKEN_LIFETIME_SECONDS) -> str:
    """A token for the ServiceAccount (which must exist) through its `token` subresource."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": expiration_seconds}}
    path = SERVICE_ACCOUNT.object_path(service_account, namespace) + "/token"
    answer = json.loads(client.request("POST", path, body=body).data)
    return str(answer["status"]["token"])


def write_token_kubeconfig(path: Path, server: str, ca_pem: bytes, token: str) -> Path:
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "sriovop-dev",
        "clusters": [{"name": "sriovop-dev", "cluster": {
            "server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "users": [{"name": "user", "user": {"token": token}}],
        "contexts": [{"name": "sriovop-dev", "context": {"cluster": "sriovop-dev", "user": "user"}}],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def mint_identities(client: Client, cluster: KubeconfigWriter, namespace: str,
                    components: tuple[Component, ...] = COMPONENTS) -> Mapping[str, Path]:
    """component name -> kubeconfig holding a token of its ServiceAccount (install_rbac first)."""
    out: dict[str, Path] = {}
    for c in components:
        token = request_token(client, namespace, c.service_account)
        out[c.name] = write_token_kubeconfig(cluster.dir / "users" / f"{c.service_account}.kubeconfig",
                                             cluster.url, cluster.ca_pem, token)
    return out
