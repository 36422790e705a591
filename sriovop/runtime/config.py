"""Where the API server is and how to authenticate to it.

For kubeconfig files the official client does the hard parts (kubeconfig merging, exec/OIDC auth
plugins, TLS material); we only keep its `Configuration` and its urllib3 pool, never its models, and
import it only then. In a pod the service account's token and CA are all there is to it, so
incluster.py loads them without the official client (whose import costs ~33 MiB of RSS).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Union

from sriovop.runtime import incluster

if TYPE_CHECKING:
    from kubernetes.client import Configuration

    AnyConfiguration = Union[Configuration, incluster.InClusterConfiguration]  # noqa: UP007


class ConfigError(Exception):
    """No usable way to reach the API server was found; the message says which sources were tried."""


@dataclass
class RestConfig:
    """Connection settings for `Client`.

    Timeouts are explicit because the official client's default (None) lets a half-open TCP connection
    hang a caller forever. `watch_read_timeout` bounds silence on a watch stream: the API server sends
    a bookmark about once a minute to watchers that ask for them, so the default leaves room for one.
    """

    configuration: AnyConfiguration
    connect_timeout: float = 5.0
    read_timeout: float = 60.0
    watch_read_timeout: float = 90.0
    max_connections: int = 32
    user_agent: str = "sriovop"
    source: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def host(self) -> str:
        return str(self.configuration.host).rstrip("/")


def load_config(
    kubeconfig: str | os.PathLike[str] | None = None, *, context: str | None = None
) -> RestConfig:
    """Resolve the API server the way kubectl and controller-runtime do.

    Order: the explicit path, else $KUBECONFIG, else the in-cluster service account, else
    ~/.kube/config (convenient for developers; never reached inside a pod).
    """
    tried: list[str] = []
    path = str(kubeconfig) if kubeconfig else os.environ.get("KUBECONFIG", "")
    if path:
        return _from_kubeconfig(path, context, source="flag" if kubeconfig else "$KUBECONFIG")
    tried.append("no --kubeconfig and $KUBECONFIG unset")
    if incluster.available(os.environ):
        try:
            return RestConfig(configuration=incluster.load(os.environ), source="in-cluster")
        except (incluster.InClusterError, OSError) as exc:
            raise ConfigError(f"in-cluster configuration is unusable: {exc}") from exc
    tried.append("not running in a cluster (KUBERNETES_SERVICE_HOST or the service-account token missing)")
    home = Path.home() / ".kube" / "config"
    if home.exists():
        return _from_kubeconfig(str(home), context, source="~/.kube/config")
    tried.append(f"{home} does not exist")
    raise ConfigError("cannot find the API server: " + "; ".join(tried))


def _from_kubeconfig(path: str, context: str | None, source: str) -> RestConfig:
    first = path.split(os.pathsep)[0]
    if os.pathsep not in path and not Path(first).exists():
        raise ConfigError(f"kubeconfig {path!r} (from {source}) does not exist")
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    cfg = k8s_client.Configuration()
    try:
        k8s_config.load_kube_config(config_file=path, context=context, client_configuration=cfg,
                                    persist_config=False)
    except (k8s_config.ConfigException, OSError, ValueError) as exc:
        raise ConfigError(f"kubeconfig {path!r} (from {source}) is unusable: {exc}") from exc
    return RestConfig(configuration=cfg, source=f"{source}:{path}")
