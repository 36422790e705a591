"""The workloads the operator-config controller applies: config daemon, device plugin, webhooks.

Shapes follow upstream's `bindata/manifests` (labels, selectors, tolerations, volumes, update strategy,
priority classes) so that RBAC, monitoring and users' kubectl habits carry over. Differences, on purpose:
- the config daemon is our own image and command, `sriovop config-daemon` (host root at /host);
- both the operator webhook and the pod-resource injector are `sriovop webhook` (DaemonSets on the
  control-plane nodes behind a Service each, as upstream renders them).

Every function takes the checked RenderSettings and the SriovOperatorConfig `default` (a dict) and
returns a plain dict ready for create/update. Optional values are omitted, never rendered empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sriovop.api.v1 import consts
from sriovop.render.settings import RenderSettings

CONFIG_DAEMON_NAME = "sriov-network-config-daemon"
DEVICE_PLUGIN_NAME = "sriov-device-plugin"
OPERATOR_WEBHOOK_NAME = "operator-webhook"
OPERATOR_WEBHOOK_SERVICE = "operator-webhook-service"
INJECTOR_NAME = "network-resources-injector"
INJECTOR_SERVICE = "network-resources-injector-service"
CONFIG_DAEMON_SERVICE_ACCOUNT = "sriov-network-config-daemon"
DEVICE_PLUGIN_SERVICE_ACCOUNT = "sriov-device-plugin"
OPERATOR_WEBHOOK_SERVICE_ACCOUNT = "operator-webhook-sa"
INJECTOR_SERVICE_ACCOUNT = "network-resources-injector-sa"
CONFIG_DAEMON_COMMAND = ("sriovop", "config-daemon")
CNI_SERVER_NAME = "sriov-cni-server"
POD_RESOURCES_DIR = "/var/lib/kubelet/pod-resources"
#: The sockets the CNI shims on /opt/cni/bin connect to, and the plugins' state (upstream's /var/lib/cni).
CNI_SOCKET_ROOT = "/var/run/sriovop"
CNI_STATE_DIR = "/var/lib/cni"
#: The device-plugin init container's command (blockDevicePluginUntilConfigured): it marks its pod and
#: waits until the config daemon removes the mark.
WAIT_FOR_CONFIG_COMMAND = ("sriovop", "wait-for-config")
WEBHOOK_COMMAND = ("sriovop", "webhook")
HOST_ROOT = "/host"
TLS_DIR = "/etc/tls"

Obj = dict[str, Any]


def _spec(operator_config: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (operator_config or {}).get("spec") or {}


def feature_gate(operator_config: Mapping[str, Any] | None, name: str) -> bool:
    gates = _spec(operator_config).get("featureGates") or {}
    if name in gates:
        return bool(gates[name])
    return bool(consts.FEATURE_GATE_DEFAULTS.get(name, False))


def daemon_node_selector(operator_config: Mapping[str, Any] | None) -> dict[str, str]:
    """configDaemonNodeSelector, or upstream's default worker + linux labels when it is empty."""
    selector = _spec(operator_config).get("configDaemonNodeSelector") or {}
    return dict(selector) if selector else dict(consts.DEFAULT_CONFIG_DAEMON_NODE_SELECTOR)


def _meta(name: str, settings: RenderSettings, description: str = "") -> Obj:
    annotations: dict[str, str] = {}
    if description:
        annotations["kubernetes.io/description"] = description
    annotations["release.openshift.io/version"] = settings.release_version
    return {"name": name, "namespace": settings.namespace, "annotations": annotations}


#: Upstream's manifests pin image tags and pull only what a node lacks; without an explicit policy a
#: `:latest` tag would mean `Always`, so a node that cannot reach the registry (or an image imported into
#: the node's runtime without one) could never start the pod.
PULL_POLICY = "IfNotPresent"


def _pull_if_not_present(workload: Obj) -> Obj:
    pod_spec = workload["spec"]["template"]["spec"]
    for container in (*pod_spec.get("initContainers", ()), *pod_spec.get("containers", ())):
        container.setdefault("imagePullPolicy", PULL_POLICY)
    return workload


def _pull_secrets(settings: RenderSettings) -> dict[str, Any]:
    if not settings.image_pull_secrets:
        return {}
    return {"imagePullSecrets": [{"name": s} for s in settings.image_pull_secrets]}


def _env_field(name: str, path: str) -> Obj:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _small_requests(cpu: str = "10m", memory: str = "10Mi") -> Obj:
    return {"requests": {"cpu": cpu, "memory": memory}}


def _cni_copier(name: str, image: str) -> Obj:
    return {
        "name": name, "image": image, "args": ["--no-sleep"],
        "securityContext": {"privileged": True}, "resources": _small_requests(),
        "volumeMounts": [
            {"name": "cnibin", "mountPath": "/host/opt/cni/bin"},
            {"name": "os-release", "mountPath": "/host/etc/os-release", "readOnly": True},
        ],
    }


def _cni_server(settings: RenderSettings) -> Obj:
    """The node server behind the sriov / ib-sriov shims the init containers install (docs/cni.md).

    Privileged in the host's network and PID namespaces: it moves VFs between namespaces, sets VF
    attributes through PF netlink, and resolves the runtime's netns paths through /proc/1/root to tell
    a live allocation from a stale one. IPAM plugins run from the host's CNI bin directory."""
    return {
        "name": CNI_SERVER_NAME,
        "image": settings.config_daemon_image,
        "command": ["sriovop", "cni-server"],
        "args": ["--plugins=sriov,ib-sriov", f"--socket-dir={CNI_SOCKET_ROOT}/cni", f"--state-dir={CNI_STATE_DIR}",
                 "--netns-root=/proc/1/root", f"--cni-path-prefix={HOST_ROOT}",
                 f"--pod-resources-socket={POD_RESOURCES_DIR}/kubelet.sock"],
        "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
        "resources": _small_requests("10m", "50Mi"),
        "volumeMounts": [
            {"name": "cni-sockets", "mountPath": CNI_SOCKET_ROOT},
            {"name": "cni-state", "mountPath": CNI_STATE_DIR},
            {"name": "cnibin", "mountPath": HOST_ROOT + settings.cni_bin_path, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
            # sriov ADD asks the kubelet which pod holds the VF it is to move (sriovop.cni.deviceowner).
            {"name": "pod-resources", "mountPath": POD_RESOURCES_DIR, "readOnly": True},
        ],
    }


def config_daemon_daemonset(settings: RenderSettings, operator_config: Mapping[str, Any] | None) -> Obj:
    """The privileged per-node daemon: hostNetwork, hostPID, the host's / at /host, every taint tolerated."""
    settings.require("config_daemon_image", "cni_image", "infiniband_cni_image")
    spec = _spec(operator_config)
    init = [_cni_copier("sriov-cni", settings.cni_image),
            _cni_copier("sriov-infiniband-cni", settings.infiniband_cni_image)]
    if settings.ovs_cni_image:
        ovs = _cni_copier("ovs-cni", settings.ovs_cni_image)
        ovs.pop("args")
        ovs["command"] = ["/bin/sh", "-c"]
        ovs["args"] = ["cp /ovs /host/opt/cni/bin/ovs && "
                       "cp /ovs-mirror-producer /host/opt/cni/bin/ovs-mirror-producer && "
                       "cp /ovs-mirror-consumer /host/opt/cni/bin/ovs-mirror-consumer"]
        init.append(ovs)
    if settings.rdma_cni_image:
        init.append(_cni_copier("rdma-cni", settings.rdma_cni_image))
    args = [f"--host-root={HOST_ROOT}"]
    if spec.get("configurationMode") == "systemd":
        args.append("--use-systemd-service")
    if spec.get("disablePlugins"):
        args.append("--disable-plugins=" + ",".join(str(p) for p in spec["disablePlugins"]))
    if feature_gate(operator_config, consts.FG_PARALLEL_NIC_CONFIG):
        args.append("--parallel-nic-config")
    if feature_gate(operator_config, consts.FG_MANAGE_SOFTWARE_BRIDGES):
        args.append("--manage-software-bridges")
    env = [
        _env_field("NODE_NAME", "spec.nodeName"),
        _env_field(consts.ENV_NAMESPACE, "metadata.namespace"),
        {"name": consts.ENV_CLUSTER_TYPE, "value": settings.cluster_type},
        {"name": consts.ENV_DEV_MODE, "value": "TRUE" if settings.dev_mode else "FALSE"},
    ]
    if settings.use_external_drainer:
        env.append({"name": consts.ENV_USE_EXTERNAL_DRAINER, "value": "true"})
    for key, value in sorted((spec.get("configDaemonEnvVars") or {}).items()):
        env.append({"name": str(key), "value": str(value)})
    labels = {"app": CONFIG_DAEMON_NAME, "component": "network", "type": "infra",
              "openshift.io/component": "network"}
    return _pull_if_not_present({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta(CONFIG_DAEMON_NAME, settings),
        "spec": {
            "selector": {"matchLabels": {"app": CONFIG_DAEMON_NAME}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "33%"}},
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": {"kubectl.kubernetes.io/default-container": CONFIG_DAEMON_NAME,
                                    "openshift.io/required-scc": "privileged"},
                },
                "spec": {
                    "hostNetwork": True,
                    "hostPID": True,
                    "nodeSelector": daemon_node_selector(operator_config),
                    "tolerations": [{"operator": "Exists"}],
                    "serviceAccountName": CONFIG_DAEMON_SERVICE_ACCOUNT,
                    "priorityClassName": "system-node-critical",
                    **_pull_secrets(settings),
                    "initContainers": init,
                    "containers": [{
                        "name": CONFIG_DAEMON_NAME,
                        "image": settings.config_daemon_image,
                        "command": list(CONFIG_DAEMON_COMMAND),
                        "args": args,
                        "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
                        "env": env,
                        "resources": _small_requests("100m", "100Mi"),
                        "volumeMounts": [{"name": "host", "mountPath": HOST_ROOT},
                                         {"name": "tmp", "mountPath": "/tmp"}],
                    }, _cni_server(settings)],
                    "volumes": [
                        {"name": "host", "hostPath": {"path": "/"}},
                        {"name": "cnibin", "hostPath": {"path": settings.cni_bin_path}},
                        {"name": "os-release", "hostPath": {"path": "/etc/os-release", "type": "File"}},
                        {"name": "tmp", "emptyDir": {}},
                        {"name": "cni-sockets", "hostPath": {"path": CNI_SOCKET_ROOT, "type": "DirectoryOrCreate"}},
                        {"name": "cni-state", "hostPath": {"path": CNI_STATE_DIR, "type": "DirectoryOrCreate"}},
                        {"name": "pod-resources", "hostPath": {"path": POD_RESOURCES_DIR, "type": "DirectoryOrCreate"}},
                    ],
                },
            },
        },
    })


def device_plugin_node_selector(operator_config: Mapping[str, Any] | None) -> dict[str, str]:
    """Nodes labelled device-plugin=Enabled, within configDaemonNodeSelector (else any Linux node)."""
    selector = dict(_spec(operator_config).get("configDaemonNodeSelector") or {}) or {"kubernetes.io/os": "linux"}
    selector[consts.DEVICE_PLUGIN_LABEL] = consts.DEVICE_PLUGIN_LABEL_ENABLED
    return selector


def device_plugin_daemonset(settings: RenderSettings, operator_config: Mapping[str, Any] | None) -> Obj:
    """sriov-network-device-plugin reading `/etc/pcidp/$(NODE_NAME)` from the device-plugin-config map."""
    settings.require("device_plugin_image", "config_daemon_image")
    use_cdi = bool(_spec(operator_config).get("useCDI"))
    args = ["--log-level=10", f"--resource-prefix={settings.resource_prefix}",
            "--config-file=/etc/pcidp/$(NODE_NAME)"]
    mounts: list[Obj] = [
        {"name": "devicesock", "mountPath": "/var/lib/kubelet/device-plugins", "readOnly": False},
        {"name": "config-volume", "mountPath": "/etc/pcidp/", "readOnly": True},
        {"name": "device-info", "mountPath": "/var/run/k8s.cni.cncf.io/devinfo/dp"},
    ]
    volumes: list[Obj] = [
        {"name": "devicesock", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
        {"name": "config-volume", "configMap": {"name": consts.DEVICE_PLUGIN_CONFIGMAP}},
        {"name": "device-info",
         "hostPath": {"path": "/var/run/k8s.cni.cncf.io/devinfo/dp", "type": "DirectoryOrCreate"}},
    ]
    if use_cdi:
        args.append("--use-cdi")
        mounts.append({"name": "dynamic-cdi", "mountPath": "/var/run/cdi"})
        volumes.append({"name": "dynamic-cdi", "hostPath": {"path": "/var/run/cdi", "type": "DirectoryOrCreate"}})
    pod_spec: Obj = {
        "hostNetwork": True,
        "nodeSelector": device_plugin_node_selector(operator_config),
        "tolerations": [{"operator": "Exists"}],
        "serviceAccountName": DEVICE_PLUGIN_SERVICE_ACCOUNT,
        "priorityClassName": "system-node-critical",
        **_pull_secrets(settings),
    }
    if feature_gate(operator_config, consts.FG_BLOCK_DEVICE_PLUGIN_UNTIL_CONFIGURED):
        pod_spec["initContainers"] = [{
            "name": "device-plugin-init",
            "image": settings.config_daemon_image,
            "command": list(WAIT_FOR_CONFIG_COMMAND),
            "env": [_env_field("NODE_NAME", "spec.nodeName"), _env_field("POD_NAME", "metadata.name"),
                    _env_field(consts.ENV_NAMESPACE, "metadata.namespace")],
            "resources": _small_requests(),
        }]
    pod_spec["containers"] = [{
        "name": DEVICE_PLUGIN_NAME,
        "image": settings.device_plugin_image,
        "args": args,
        "env": [_env_field("NODE_NAME", "spec.nodeName")],
        "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
        "resources": _small_requests("10m", "50Mi"),
        "volumeMounts": mounts,
    }]
    pod_spec["volumes"] = volumes
    labels = {"app": DEVICE_PLUGIN_NAME, "component": "network", "type": "infra",
              "openshift.io/component": "network"}
    return _pull_if_not_present({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta(DEVICE_PLUGIN_NAME, settings,
                          "This daemon set launches the SR-IOV network device plugin on each node.\n"),
        "spec": {
            "selector": {"matchLabels": {"app": DEVICE_PLUGIN_NAME}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "33%"}},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    })


#: Both admission servers run on the control-plane nodes (OpenShift still labels them `master`), so every
#: API server has one close by; upstream's required node affinity.
CONTROL_PLANE_AFFINITY: Obj = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "Exists"}]}
                          for key in ("node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane")]}}}
#: The operator webhook tolerates the control-plane taints (and a node not ready yet, so that admission
#: comes up with the control plane); the injector tolerates every NoSchedule/NoExecute taint, as upstream.
OPERATOR_WEBHOOK_TOLERATIONS: tuple[Obj, ...] = tuple(
    {"key": key, "operator": "Exists", "effect": "NoSchedule"}
    for key in ("node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane",
                "node.kubernetes.io/not-ready"))
INJECTOR_TOLERATIONS: tuple[Obj, ...] = ({"operator": "Exists", "effect": "NoSchedule"},
                                         {"operator": "Exists", "effect": "NoExecute"})


def _webhook_daemonset(name: str, service_account: str, image: str, secret: str, port: int,
                       settings: RenderSettings, description: str, tolerations: tuple[Obj, ...],
                       pod_labels: Mapping[str, str]) -> Obj:
    """An admission server on every control-plane node (upstream's DaemonSet), serving the certificate
    of its Secret (reloaded when the Secret changes, so rotation restarts nothing)."""
    return _pull_if_not_present({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {**_meta(name, settings, description), "labels": {"app": name}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "33%"}},
            "template": {
                "metadata": {"labels": {"app": name, **pod_labels},
                             "annotations": {"openshift.io/required-scc": "restricted-v2"}},
                "spec": {
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    "serviceAccountName": service_account,
                    "priorityClassName": "system-cluster-critical",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "affinity": CONTROL_PLANE_AFFINITY,
                    "tolerations": [dict(t) for t in tolerations],
                    **_pull_secrets(settings),
                    "containers": [{
                        "name": "webhook-server",
                        "image": image,
                        "command": list(WEBHOOK_COMMAND),
                        "args": [f"--port={port}", f"--tls-private-key-file={TLS_DIR}/tls.key",
                                 f"--tls-cert-file={TLS_DIR}/tls.crt"],
                        "env": [
                            _env_field(consts.ENV_NAMESPACE, "metadata.namespace"),
                            {"name": consts.ENV_DEV_MODE, "value": "TRUE" if settings.dev_mode else "FALSE"},
                            {"name": consts.ENV_RESOURCE_PREFIX, "value": settings.resource_prefix},
                        ],
                        "ports": [{"name": "https", "containerPort": port, "protocol": "TCP"}],
                        "readinessProbe": {"httpGet": {"path": "/readyz", "port": port, "scheme": "HTTPS"}},
                        "securityContext": {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                                            "capabilities": {"drop": ["ALL"]}},
                        "resources": _small_requests("10m", "50Mi"),
                        "volumeMounts": [{"mountPath": TLS_DIR, "name": "tls", "readOnly": True}],
                    }],
                    "volumes": [{"name": "tls", "secret": {"secretName": secret}}],
                },
            },
        },
    })


def _service(name: str, app: str, port: int, settings: RenderSettings,
             annotations: Mapping[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": settings.namespace, "labels": {"app": app}}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {"selector": {"app": app},
                 "ports": [{"name": "https", "port": 443, "targetPort": port, "protocol": "TCP"}]},
    }


#: OpenShift's service CA writes a serving certificate for a Service into the Secret this names.
OPENSHIFT_SERVING_CERT_ANNOTATION = "service.beta.openshift.io/serving-cert-secret-name"


def _serving_cert_annotation(secret: str, openshift_service_ca: bool) -> dict[str, str]:
    return {OPENSHIFT_SERVING_CERT_ANNOTATION: secret} if openshift_service_ca else {}


def operator_webhook_daemonset(settings: RenderSettings) -> Obj:
    settings.require("webhook_image")
    return _webhook_daemonset(
        OPERATOR_WEBHOOK_NAME, OPERATOR_WEBHOOK_SERVICE_ACCOUNT, settings.webhook_image,
        settings.operator_webhook_secret, settings.operator_webhook_port, settings,
        "This daemon set launches the sriov network operator admission control webhook on control-plane nodes.\n",
        OPERATOR_WEBHOOK_TOLERATIONS, {})


def operator_webhook_service(settings: RenderSettings, *, openshift_service_ca: bool = False) -> Obj:
    return _service(OPERATOR_WEBHOOK_SERVICE, OPERATOR_WEBHOOK_NAME, settings.operator_webhook_port, settings,
                    _serving_cert_annotation(settings.operator_webhook_secret, openshift_service_ca))


def injector_daemonset(settings: RenderSettings) -> Obj:
    settings.require("injector_image")
    return _webhook_daemonset(
        INJECTOR_NAME, INJECTOR_SERVICE_ACCOUNT, settings.injector_image, settings.injector_secret,
        settings.injector_webhook_port, settings,
        "This daemon set launches the network resources injector component on control-plane nodes.\n",
        INJECTOR_TOLERATIONS, {"component": "network", "type": "infra", "openshift.io/component": "network"})


def injector_control_switches(settings: RenderSettings) -> Obj:
    """The injector's `nri-control-switches` ConfigMap as upstream's operator ships it: the hugepage
    downward API switched on. The operator creates it when absent and leaves it alone afterwards, so
    edits (honor resources, user-defined injections) are the user's to make."""
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": consts.INJECTOR_CONTROL_SWITCHES_CONFIGMAP, "namespace": settings.namespace},
        "data": {"config.json": '{\n  "features": {\n    "enableHugePageDownApi": true\n  }\n}\n'},
    }


def injector_service(settings: RenderSettings, *, openshift_service_ca: bool = False) -> Obj:
    return _service(INJECTOR_SERVICE, INJECTOR_NAME, settings.injector_webhook_port, settings,
                    _serving_cert_annotation(settings.injector_secret, openshift_service_ca))
