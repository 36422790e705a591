"""In-cluster configuration without the official client: the service account's token and CA file.

Inside a pod, reaching the API server needs only $KUBERNETES_SERVICE_HOST/PORT, the mounted token and
the cluster's CA. Importing the official client for that costs a long-running process about 33 MiB of
RSS (its package imports every API model, pydantic and requests with it), so the operator, the webhook
and the config daemon load it themselves; kubeconfig files (contexts, exec and OIDC plugins, proxies)
still go through the official client, imported only then (config.py).

`InClusterConfiguration` carries the attributes of the official `Configuration` that `Client` reads,
so both kinds of configuration go through the same code. The token is read again once a minute, as
client-go and the official client do: kubelet rotates bound service-account tokens in place.
"""

from __future__ import annotations

import ssl
import threading
import time
from pathlib import Path
from typing import Any

import urllib3

#: Where kubelet mounts the service account; a module attribute so a benchmark can point it elsewhere.
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0


class InClusterError(Exception):
    """The in-cluster configuration is unusable; the message names the missing or empty part."""


def join_host_port(host: str, port: str) -> str:
    """Go's net.JoinHostPort: IPv6 literals in brackets."""
    return f"[{host}]:{port}" if ":" in host or "%" in host else f"{host}:{port}"


class InClusterConfiguration:
    """The subset of the official `Configuration` that `Client` uses, for a pod's service account."""

    # Read by Client the same way as on the official Configuration; never set for a service account.
    username: str | None = None
    password: str | None = None

    def __init__(self, host: str, port: str, token_file: Path, ca_file: Path) -> None:
        for env, value in (("KUBERNETES_SERVICE_HOST", host), ("KUBERNETES_SERVICE_PORT", port)):
            if not value:
                raise InClusterError(f"${env} is empty or unset")
        for what, path in (("token", token_file), ("CA", ca_file)):
            if not path.is_file():
                raise InClusterError(f"service-account {what} file {path} does not exist")
            if path.stat().st_size == 0:
                raise InClusterError(f"service-account {what} file {path} is empty")
        self.host = "https://" + join_host_port(host, port)
        self.ssl_ca_cert = str(ca_file)
        self.connection_pool_maxsize: int | None = None
        self._token_file = token_file
        self._token = ""
        self._read_at = float("-inf")
        self._lock = threading.Lock()
        self._read_token()

    def _read_token(self) -> str:
        with self._lock:
            now = time.monotonic()
            if now - self._read_at >= TOKEN_REREAD_SECONDS:
                token = self._token_file.read_text().strip()
                if not token:
                    raise InClusterError(f"service-account token file {self._token_file} is empty")
                self._token, self._read_at = token, now
            return self._token

    def auth_settings(self) -> dict[str, dict[str, str]]:
        """As the official Configuration returns it: the bearer token as a header."""
        return {"BearerToken": {"in": "header", "key": "authorization", "value": "Bearer " + self._read_token()}}

    def get_basic_auth_token(self) -> str:
        raise InClusterError("a service account has no basic-auth credentials")

    def pool_manager(self) -> urllib3.PoolManager:
        """The HTTPS pool: verified against the cluster CA, no proxy (as the official client in a pod)."""
        args: dict[str, Any] = {"cert_reqs": ssl.CERT_REQUIRED, "ca_certs": self.ssl_ca_cert}
        if self.connection_pool_maxsize:
            args["maxsize"] = self.connection_pool_maxsize
        return urllib3.PoolManager(num_pools=4, **args)


def load(environ: dict[str, str] | Any) -> InClusterConfiguration:
    """From the pod's environment and the mounted service account (SERVICE_ACCOUNT_DIR)."""
    return InClusterConfiguration(
        environ.get("KUBERNETES_SERVICE_HOST", ""), environ.get("KUBERNETES_SERVICE_PORT", ""),
        SERVICE_ACCOUNT_DIR / "token", SERVICE_ACCOUNT_DIR / "ca.crt")


def available(environ: dict[str, str] | Any) -> bool:
    """Running in a pod: the service host is set and the token is mounted."""
    return bool(environ.get("KUBERNETES_SERVICE_HOST")) and (SERVICE_ACCOUNT_DIR / "token").exists()
