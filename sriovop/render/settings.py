"""What the operator's workload templates need from its environment, read once and checked.

Upstream reads these variables at render time and renders an empty `image:` when one is missing, which
only fails later as an unpullable pod. We read them up front and name the missing variable instead.
Variable names are upstream's so that existing Deployments/helm values keep working.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from sriovop.api.v1 import consts

ENV_CONFIG_DAEMON_IMAGE = "SRIOV_NETWORK_CONFIG_DAEMON_IMAGE"
ENV_DEVICE_PLUGIN_IMAGE = "SRIOV_DEVICE_PLUGIN_IMAGE"
ENV_CNI_IMAGE = "SRIOV_CNI_IMAGE"
ENV_INFINIBAND_CNI_IMAGE = "SRIOV_INFINIBAND_CNI_IMAGE"
ENV_OVS_CNI_IMAGE = "OVS_CNI_IMAGE"
ENV_RDMA_CNI_IMAGE = "RDMA_CNI_IMAGE"
ENV_INJECTOR_IMAGE = "NETWORK_RESOURCES_INJECTOR_IMAGE"
ENV_WEBHOOK_IMAGE = "SRIOV_NETWORK_WEBHOOK_IMAGE"
ENV_METRICS_EXPORTER_IMAGE = "METRICS_EXPORTER_IMAGE"
ENV_METRICS_EXPORTER_PROXY_IMAGE = "METRICS_EXPORTER_KUBE_RBAC_PROXY_IMAGE"
ENV_CNI_BIN_PATH = "SRIOV_CNI_BIN_PATH"
ENV_IMAGE_PULL_SECRETS = "IMAGE_PULL_SECRETS"
ENV_RELEASE_VERSION = "RELEASEVERSION"
ENV_OPERATOR_WEBHOOK_SECRET = "ADMISSION_CONTROLLERS_CERTIFICATES_OPERATOR_SECRET_NAME"
ENV_INJECTOR_SECRET = "ADMISSION_CONTROLLERS_CERTIFICATES_INJECTOR_SECRET_NAME"
ENV_OPERATOR_WEBHOOK_PORT = "OPERATOR_WEBHOOK_NETWORK_POLICY_PORT"
ENV_INJECTOR_WEBHOOK_PORT = "INJECTOR_WEBHOOK_NETWORK_POLICY_PORT"

DEFAULT_CNI_BIN_PATH = "/var/lib/cni/bin"
DEFAULT_OPERATOR_WEBHOOK_SECRET = "operator-webhook-cert"
DEFAULT_INJECTOR_SECRET = "network-resources-injector-cert"
DEFAULT_WEBHOOK_PORT = 6443


class SettingsError(ValueError):
    """A required environment variable is missing or malformed; the message names it."""


def port_from_env(env: Mapping[str, str], name: str, default: int = DEFAULT_WEBHOOK_PORT) -> int:
    """The TCP port in `env[name]` (default when unset); SettingsError naming the variable otherwise."""
    raw = env.get(name) or str(default)
    try:
        port = int(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: must be a TCP port number") from None
    if not 0 < port < 65536:
        raise SettingsError(f"{name}={raw!r}: must be between 1 and 65535")
    return port


@dataclass(frozen=True)
class RenderSettings:
    namespace: str
    resource_prefix: str = consts.DEFAULT_RESOURCE_PREFIX
    config_daemon_image: str = ""
    device_plugin_image: str = ""
    cni_image: str = ""
    infiniband_cni_image: str = ""
    ovs_cni_image: str = ""
    rdma_cni_image: str = ""
    injector_image: str = ""
    webhook_image: str = ""
    cni_bin_path: str = DEFAULT_CNI_BIN_PATH
    image_pull_secrets: tuple[str, ...] = ()
    release_version: str = ""
    cluster_type: str = "kubernetes"
    dev_mode: bool = False
    use_external_drainer: bool = False
    operator_webhook_secret: str = DEFAULT_OPERATOR_WEBHOOK_SECRET
    injector_secret: str = DEFAULT_INJECTOR_SECRET
    operator_webhook_port: int = DEFAULT_WEBHOOK_PORT
    injector_webhook_port: int = DEFAULT_WEBHOOK_PORT
    extra: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, namespace: str, env: Mapping[str, str] | None = None) -> RenderSettings:
        e = os.environ if env is None else env
        secrets = tuple(s.strip() for s in (e.get(ENV_IMAGE_PULL_SECRETS) or "").split(",") if s.strip())
        return cls(
            namespace=namespace,
            resource_prefix=e.get(consts.ENV_RESOURCE_PREFIX, consts.DEFAULT_RESOURCE_PREFIX),
            config_daemon_image=e.get(ENV_CONFIG_DAEMON_IMAGE, ""),
            device_plugin_image=e.get(ENV_DEVICE_PLUGIN_IMAGE, ""),
            cni_image=e.get(ENV_CNI_IMAGE, ""),
            infiniband_cni_image=e.get(ENV_INFINIBAND_CNI_IMAGE, ""),
            ovs_cni_image=e.get(ENV_OVS_CNI_IMAGE, ""),
            rdma_cni_image=e.get(ENV_RDMA_CNI_IMAGE, ""),
            injector_image=e.get(ENV_INJECTOR_IMAGE, ""),
            webhook_image=e.get(ENV_WEBHOOK_IMAGE, ""),
            cni_bin_path=e.get(ENV_CNI_BIN_PATH) or DEFAULT_CNI_BIN_PATH,
            image_pull_secrets=secrets,
            release_version=e.get(ENV_RELEASE_VERSION, ""),
            cluster_type=e.get(consts.ENV_CLUSTER_TYPE) or "kubernetes",
            dev_mode=(e.get(consts.ENV_DEV_MODE) or "").upper() == "TRUE",
            use_external_drainer=(e.get(consts.ENV_USE_EXTERNAL_DRAINER) or "").lower() == "true",
            operator_webhook_secret=e.get(ENV_OPERATOR_WEBHOOK_SECRET) or DEFAULT_OPERATOR_WEBHOOK_SECRET,
            injector_secret=e.get(ENV_INJECTOR_SECRET) or DEFAULT_INJECTOR_SECRET,
            operator_webhook_port=port_from_env(e, ENV_OPERATOR_WEBHOOK_PORT),
            injector_webhook_port=port_from_env(e, ENV_INJECTOR_WEBHOOK_PORT),
        )

    def require(self, *names: str) -> None:
        """Raise SettingsError naming every missing image variable among `names` (attribute names)."""
        env_of = {
            "config_daemon_image": ENV_CONFIG_DAEMON_IMAGE, "device_plugin_image": ENV_DEVICE_PLUGIN_IMAGE,
            "cni_image": ENV_CNI_IMAGE, "infiniband_cni_image": ENV_INFINIBAND_CNI_IMAGE,
            "injector_image": ENV_INJECTOR_IMAGE, "webhook_image": ENV_WEBHOOK_IMAGE,
        }
        missing = [env_of.get(n, n) for n in names if not getattr(self, n)]
        if missing:
            raise SettingsError(
                f"environment variable(s) {', '.join(missing)} must name a container image "
                "(the operator renders its DaemonSets/Deployments with them)"
            )
