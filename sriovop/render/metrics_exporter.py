"""The metrics exporter the operator deploys with the `metricsExporter` feature gate.

Upstream's `bindata/manifests/metrics-exporter`: a DaemonSet `sriov-network-metrics-exporter` on the
config daemon's nodes (hostNetwork, every taint tolerated, the kubelet's pod-resources socket and the
host's sysfs mounted read-only under /host) and a Service `sriov-network-metrics-exporter-service`
(annotation `prometheus.io/target: "true"`, label `name: sriov-network-metrics-exporter-service`, port
`sriov-network-metrics`) that a ServiceMonitor selects.

Differences, on purpose:
- the exporter is `sriovop metrics-exporter` from the config-daemon image (or `$METRICS_EXPORTER_IMAGE`);
- kube-rbac-proxy (TLS and authorization in front of the exporter, upstream's second container) is
  rendered only when `$METRICS_EXPORTER_KUBE_RBAC_PROXY_IMAGE` names its image; the exporter then
  listens on 127.0.0.1 as upstream's does. Without it the exporter serves plain HTTP on the node's IP
  (`status.hostIP`), which a NetworkPolicy or a firewall has to protect;
- no ServiceMonitor or PrometheusRule is created (their CRDs belong to the Prometheus operator, which
  may be absent): the Service carries the labels and port name upstream's ServiceMonitor selects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sriovop.render import workloads
from sriovop.render.settings import (
    ENV_METRICS_EXPORTER_IMAGE,
    ENV_METRICS_EXPORTER_PROXY_IMAGE,
    RenderSettings,
    SettingsError,
    port_from_env,
)

NAME: Final = "sriov-network-metrics-exporter"
SERVICE_NAME: Final = "sriov-network-metrics-exporter-service"
SERVICE_ACCOUNT: Final = "metrics-exporter-sa"
PORT_NAME: Final = "sriov-network-metrics"
ENV_PORT: Final = "METRICS_EXPORTER_PORT"
ENV_SECRET: Final = "METRICS_EXPORTER_SECRET_NAME"
DEFAULT_PORT: Final = 9110
DEFAULT_SECRET: Final = "metrics-exporter-cert"
COMMAND: Final = ("sriovop", "metrics-exporter")
KUBELET_SOCKET: Final = "/var/lib/kubelet/pod-resources/kubelet.sock"


@dataclass(frozen=True)
class ExporterSettings:
    image: str
    proxy_image: str = ""
    port: int = DEFAULT_PORT
    secret: str = DEFAULT_SECRET

    @classmethod
    def from_env(cls, env: Mapping[str, str], settings: RenderSettings) -> ExporterSettings:
        port = port_from_env(env, ENV_PORT, DEFAULT_PORT)
        image = env.get(ENV_METRICS_EXPORTER_IMAGE) or settings.config_daemon_image
        if not image:
            raise SettingsError(f"environment variable {ENV_METRICS_EXPORTER_IMAGE} (or "
                                "SRIOV_NETWORK_CONFIG_DAEMON_IMAGE) must name the image with "
                                "`sriovop metrics-exporter`")
        return cls(image=image, proxy_image=env.get(ENV_METRICS_EXPORTER_PROXY_IMAGE, ""), port=port,
                   secret=env.get(ENV_SECRET) or DEFAULT_SECRET)


def _host_path(name: str, path: str, kind: str) -> dict[str, Any]:
    return {"name": name, "hostPath": {"path": path, "type": kind}}


def daemonset(settings: RenderSettings, exporter: ExporterSettings,
              operator_config: Mapping[str, Any] | None) -> dict[str, Any]:
    proxied = bool(exporter.proxy_image)
    listen = f"127.0.0.1:{exporter.port}" if proxied else f"$(HOST_IP):{exporter.port}"
    host_ip = {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}}
    exporter_container: dict[str, Any] = {
        "name": "metrics-exporter",
        "image": exporter.image,
        "imagePullPolicy": "IfNotPresent",
        "command": list(COMMAND),
        "args": [f"--web.listen-address={listen}", "--path.sysbuspci=/host/sys/bus/pci/devices/",
                 "--path.sysclassnet=/host/sys/class/net/", "--path.kubeletsocket=/host/kubelet.sock",
                 "--collector.kubepoddevice=true", "--collector.vfstatspriority=netlink,sysfs",
                 "--node-name=$(NODE_NAME)"],
        "env": [host_ip, {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}},
        "securityContext": {"capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True,
                            "allowPrivilegeEscalation": False},
        "volumeMounts": [
            {"name": "kubeletsocket", "mountPath": "/host/kubelet.sock"},
            {"name": "sysbuspcidevices", "mountPath": "/host/sys/bus/pci/devices", "readOnly": True},
            {"name": "sysdevices", "mountPath": "/host/sys/devices", "readOnly": True},
            {"name": "sysclassnet", "mountPath": "/host/sys/class/net", "readOnly": True},
        ],
    }
    if not proxied:
        exporter_container["ports"] = [{"containerPort": exporter.port, "name": "http-metrics"}]
    containers = [exporter_container]
    volumes = [
        _host_path("kubeletsocket", KUBELET_SOCKET, "Socket"),
        _host_path("sysclassnet", "/sys/class/net", "Directory"),
        _host_path("sysbuspcidevices", "/sys/bus/pci/devices", "Directory"),
        _host_path("sysdevices", "/sys/devices", "Directory"),
    ]
    if proxied:
        containers.append({
            "name": "kube-rbac-proxy",
            "image": exporter.proxy_image,
            "imagePullPolicy": "IfNotPresent",
            "args": ["--logtostderr", f"--secure-listen-address=[$(HOST_IP)]:{exporter.port}",
                     f"--upstream=http://127.0.0.1:{exporter.port}/", "--tls-private-key-file=/etc/metrics/tls.key",
                     "--tls-cert-file=/etc/metrics/tls.crt"],
            "ports": [{"containerPort": exporter.port, "name": "https-metrics"}],
            "env": [host_ip],
            "securityContext": {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False},
            "resources": {"requests": {"cpu": "10m", "memory": "20Mi"}},
            "volumeMounts": [{"name": "metrics-certs", "mountPath": "/etc/metrics", "readOnly": True}],
        })
        volumes.append({"name": "metrics-certs", "secret": {"defaultMode": 420, "secretName": exporter.secret}})
    pull = {"imagePullSecrets": [{"name": s} for s in settings.image_pull_secrets]} \
        if settings.image_pull_secrets else {}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": settings.namespace, "labels": {"app": NAME}},
        "spec": {
            "selector": {"matchLabels": {"app": NAME}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "33%"}},
            "template": {
                "metadata": {"labels": {"app": NAME}},
                "spec": {
                    "hostNetwork": True,
                    "serviceAccountName": SERVICE_ACCOUNT,
                    **pull,
                    "containers": containers,
                    "tolerations": [{"operator": "Exists"}],
                    "priorityClassName": "system-node-critical",
                    "nodeSelector": workloads.daemon_node_selector(operator_config),
                    "restartPolicy": "Always",
                    "volumes": volumes,
                },
            },
        },
    }


def service(settings: RenderSettings, exporter: ExporterSettings) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE_NAME, "namespace": settings.namespace,
                     "annotations": {"prometheus.io/target": "true"}, "labels": {"name": SERVICE_NAME}},
        "spec": {
            "selector": {"app": NAME},
            "ports": [{"protocol": "TCP", "name": PORT_NAME, "port": exporter.port, "targetPort": exporter.port}],
        },
    }
