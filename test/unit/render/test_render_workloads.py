"""DaemonSets and Services the operator-config controller applies."""

from __future__ import annotations

from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.render.settings import RenderSettings, SettingsError
from sriovop.render.workloads import (
    config_daemon_daemonset,
    device_plugin_daemonset,
    injector_daemonset,
    injector_service,
    operator_webhook_daemonset,
    operator_webhook_service,
)

ENV = {
    "SRIOV_NETWORK_CONFIG_DAEMON_IMAGE": "quay.io/x/sriovop:1", "SRIOV_DEVICE_PLUGIN_IMAGE": "quay.io/x/dp:2",
    "SRIOV_CNI_IMAGE": "quay.io/x/cni:3", "SRIOV_INFINIBAND_CNI_IMAGE": "quay.io/x/ib:4",
    "NETWORK_RESOURCES_INJECTOR_IMAGE": "quay.io/x/sriovop:1", "SRIOV_NETWORK_WEBHOOK_IMAGE": "quay.io/x/sriovop:1",
    "RESOURCE_PREFIX": "example.com", "IMAGE_PULL_SECRETS": "a, b", "DEV_MODE": "TRUE",
}
NS = "sriov-network-operator"


def settings(**overrides: str) -> RenderSettings:
    return RenderSettings.from_env(NS, {**ENV, **overrides})


def config(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "default", "namespace": NS}, "spec": spec}


def pod(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def test_config_daemon_is_privileged_host_daemon() -> None:
    ds = config_daemon_daemonset(settings(), config())
    assert ds["kind"] == "DaemonSet" and ds["metadata"] == {
        "name": "sriov-network-config-daemon", "namespace": NS, "annotations": {"release.openshift.io/version": ""}}
    p = pod(ds)
    assert p["hostNetwork"] is True and p["hostPID"] is True
    assert p["tolerations"] == [{"operator": "Exists"}]
    assert p["nodeSelector"] == {"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux"}
    assert p["imagePullSecrets"] == [{"name": "a"}, {"name": "b"}]
    c, cni = p["containers"]
    assert c["image"] == "quay.io/x/sriovop:1"
    assert c["command"] == ["sriovop", "config-daemon"] and c["args"] == ["--host-root=/host"]
    assert c["securityContext"]["privileged"] is True
    assert {"name": "host", "mountPath": "/host"} in c["volumeMounts"]
    assert {"name": "host", "hostPath": {"path": "/"}} in p["volumes"]
    env = {e["name"]: e for e in c["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert env["NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert env["DEV_MODE"]["value"] == "TRUE"
    assert [i["image"] for i in p["initContainers"]] == ["quay.io/x/cni:3", "quay.io/x/ib:4"]
    assert ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == "33%"
    # The CNI server the shims installed by the init containers talk to: our config-daemon image.
    assert cni["name"] == "sriov-cni-server" and cni["image"] == "quay.io/x/sriovop:1"
    assert cni["command"] == ["sriovop", "cni-server"] and "--plugins=sriov,ib-sriov" in cni["args"]
    assert "--socket-dir=/var/run/sriovop/cni" in cni["args"] and "--state-dir=/var/lib/cni" in cni["args"]
    assert cni["securityContext"]["privileged"] is True
    volumes = {v["name"]: v for v in p["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in cni["volumeMounts"]}
    assert volumes["cni-sockets"]["hostPath"]["path"] == mounts["cni-sockets"] == "/var/run/sriovop"
    assert volumes["cni-state"]["hostPath"]["path"] == mounts["cni-state"] == "/var/lib/cni"
    # IPAM plugins run from the host's CNI bin directory, at the runtime's CNI_PATH under /host.
    assert mounts["cnibin"] == "/host" + volumes["cnibin"]["hostPath"]["path"]
    assert "--cni-path-prefix=/host" in cni["args"]
    # The VF ownership check asks the node's kubelet (pod-resources), read-only.
    assert "--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock" in cni["args"]
    assert volumes["pod-resources"]["hostPath"]["path"] == mounts["pod-resources"] == "/var/lib/kubelet/pod-resources"


def test_config_daemon_options_from_operator_config() -> None:
    cfg = config(configDaemonNodeSelector={"sriov": "true"}, disablePlugins=["mellanox"],
                 featureGates={"parallelNicConfig": True, "manageSoftwareBridges": True},
                 configDaemonEnvVars={"B": "2", "A": "1"}, configurationMode="systemd")
    s = settings(OVS_CNI_IMAGE="quay.io/x/ovs:5", RDMA_CNI_IMAGE="quay.io/x/rdma:6", USE_EXTERNAL_DRAINER="true")
    p = pod(config_daemon_daemonset(s, cfg))
    assert p["nodeSelector"] == {"sriov": "true"}
    c = p["containers"][0]
    assert c["args"] == ["--host-root=/host", "--use-systemd-service", "--disable-plugins=mellanox",
                         "--parallel-nic-config", "--manage-software-bridges"]
    assert [e["name"] for e in c["env"]][-3:] == ["USE_EXTERNAL_DRAINER", "A", "B"]
    assert [i["name"] for i in p["initContainers"]] == ["sriov-cni", "sriov-infiniband-cni", "ovs-cni", "rdma-cni"]


def test_missing_images_are_named() -> None:
    with pytest.raises(SettingsError, match="SRIOV_NETWORK_CONFIG_DAEMON_IMAGE, SRIOV_CNI_IMAGE"):
        config_daemon_daemonset(settings(SRIOV_NETWORK_CONFIG_DAEMON_IMAGE="", SRIOV_CNI_IMAGE=""), config())
    with pytest.raises(SettingsError, match="SRIOV_DEVICE_PLUGIN_IMAGE"):
        device_plugin_daemonset(settings(SRIOV_DEVICE_PLUGIN_IMAGE=""), config())
    with pytest.raises(SettingsError, match="OPERATOR_WEBHOOK_NETWORK_POLICY_PORT"):
        settings(OPERATOR_WEBHOOK_NETWORK_POLICY_PORT="x")


def test_device_plugin_daemonset() -> None:
    ds = device_plugin_daemonset(settings(), config(useCDI=True))
    p = pod(ds)
    assert p["nodeSelector"] == {"kubernetes.io/os": "linux", consts.DEVICE_PLUGIN_LABEL: "Enabled"}
    (c,) = p["containers"]
    assert c["image"] == "quay.io/x/dp:2"
    assert c["args"] == ["--log-level=10", "--resource-prefix=example.com", "--config-file=/etc/pcidp/$(NODE_NAME)",
                         "--use-cdi"]
    assert {"name": "config-volume", "configMap": {"name": "device-plugin-config"}} in p["volumes"]
    # blockDevicePluginUntilConfigured defaults to true: the wait-for-config init container is there
    assert p["initContainers"][0]["image"] == "quay.io/x/sriovop:1"
    cfg = config(configDaemonNodeSelector={"pool": "a"}, featureGates={"blockDevicePluginUntilConfigured": False})
    p2 = pod(device_plugin_daemonset(settings(), cfg))
    assert p2["nodeSelector"] == {"pool": "a", consts.DEVICE_PLUGIN_LABEL: "Enabled"}
    assert "initContainers" not in p2


def test_webhook_daemonsets_and_services() -> None:
    s = settings()
    ds = operator_webhook_daemonset(s)
    assert ds["kind"] == "DaemonSet" and ds["metadata"]["name"] == "operator-webhook"
    assert ds["spec"]["selector"] == {"matchLabels": {"app": "operator-webhook"}}
    (c,) = pod(ds)["containers"]
    assert c["command"] == ["sriovop", "webhook"]
    assert c["args"] == ["--port=6443", "--tls-private-key-file=/etc/tls/tls.key", "--tls-cert-file=/etc/tls/tls.crt"]
    assert c["volumeMounts"] == [{"mountPath": "/etc/tls", "name": "tls", "readOnly": True}]
    assert pod(ds)["volumes"] == [{"name": "tls", "secret": {"secretName": "operator-webhook-cert"}}]
    svc = operator_webhook_service(s)
    assert svc["metadata"]["name"] == "operator-webhook-service"
    assert "annotations" not in svc["metadata"]
    assert svc["spec"] == {"selector": {"app": "operator-webhook"},
                           "ports": [{"name": "https", "port": 443, "targetPort": 6443, "protocol": "TCP"}]}
    inj = injector_daemonset(s)
    assert inj["kind"] == "DaemonSet" and inj["metadata"]["name"] == "network-resources-injector"
    assert pod(inj)["volumes"] == [{"name": "tls", "secret": {"secretName": "network-resources-injector-cert"}}]
    selector = injector_service(s)["spec"]["selector"]
    assert selector == {"app": "network-resources-injector"}
    assert selector.items() <= inj["spec"]["template"]["metadata"]["labels"].items()  # the Service finds the pods
    assert injector_service(s)["metadata"]["name"] == "network-resources-injector-service"


CONTROL_PLANE_TERMS = [{"matchExpressions": [{"key": "node-role.kubernetes.io/master", "operator": "Exists"}]},
                       {"matchExpressions": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]}]


@pytest.mark.parametrize("render", [operator_webhook_daemonset, injector_daemonset])
def test_admission_servers_run_only_on_control_plane_nodes_and_tolerate_their_taints(render: Any) -> None:
    p = pod(render(settings()))
    assert p["nodeSelector"] == {"kubernetes.io/os": "linux"}
    required = p["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"] == CONTROL_PLANE_TERMS  # either label (terms are ORed)
    taints = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
              {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]
    for taint in taints:
        assert any(t.get("key") in (None, taint["key"]) and t["operator"] == "Exists"
                   and t.get("effect") in (None, taint["effect"]) for t in p["tolerations"]), (taint, p["tolerations"])
    assert p["priorityClassName"] == "system-cluster-critical"
    assert p["securityContext"]["runAsNonRoot"] is True
    (c,) = p["containers"]
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 6443, "scheme": "HTTPS"}


def test_openshift_service_ca_writes_the_secret_the_daemonset_mounts() -> None:
    s = settings()
    svc = operator_webhook_service(s, openshift_service_ca=True)
    assert svc["metadata"]["annotations"] == {
        "service.beta.openshift.io/serving-cert-secret-name": "operator-webhook-cert"}
    inj = injector_service(s, openshift_service_ca=True)
    assert inj["metadata"]["annotations"] == {
        "service.beta.openshift.io/serving-cert-secret-name": "network-resources-injector-cert"}


@pytest.mark.parametrize("render", [
    lambda: config_daemon_daemonset(settings(), config()),
    lambda: device_plugin_daemonset(settings(), config(featureGates={"blockDevicePluginUntilConfigured": True})),
    lambda: operator_webhook_daemonset(settings()),
    lambda: injector_daemonset(settings()),
])
def test_every_container_pulls_only_what_the_node_lacks(render: Any) -> None:
    """A `:latest` tag without a policy means Always: an image imported into the node could never run."""
    p = pod(render())
    containers = [*p.get("initContainers", []), *p["containers"]]
    assert len(containers) >= 1
    assert {c["name"]: c.get("imagePullPolicy") for c in containers} == {c["name"]: "IfNotPresent" for c in containers}
