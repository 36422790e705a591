"""SriovOperatorConfig `default` → DaemonSets, webhooks, finalizer, Ready and the live log level."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_OPERATOR_CONFIG
from sriovop.controllers.operator_config import OperatorConfigReconciler
from sriovop.controllers.webhook_certs import CertSettings, default_targets, pki
from sriovop.controllers.webhook_certs.isolated import IsolatedCertReconciler
from sriovop.render import workloads
from sriovop.render.settings import RenderSettings
from sriovop.runtime.client import Client
from sriovop.runtime.controller import Request
from sriovop.runtime.errors import NotFound
from sriovop.runtime.events import EventRecorder
from sriovop.runtime.kinds import (
    CONFIG_MAP,
    DAEMON_SET,
    MUTATING_WEBHOOK_CONFIGURATION,
    SECRET,
    SERVICE,
    VALIDATING_WEBHOOK_CONFIGURATION,
)
from sriovop.runtime.manager import Manager
from test.support.operator_drain import client_for
from test.support.operator_process import TEST_IMAGES
from test.support.poll import wait_for


def settings(namespace: str) -> RenderSettings:
    return RenderSettings.from_env(namespace, {"RESOURCE_PREFIX": "openshift.io", **TEST_IMAGES})


@contextmanager
def running(kubeconfig: Path, namespace: str, levels: list[str]) -> Iterator[OperatorConfigReconciler]:
    """The operator-config controller and (self-managed certificates, the default) the certificate
    controller, wired as the operator wires them."""
    client = client_for(kubeconfig)
    mgr = Manager(client, name=f"opconfig-{namespace}", namespaces={namespace})
    recorder = EventRecorder(client, component="sriov-network-operator")
    render = settings(namespace)
    certs = IsolatedCertReconciler(mgr.server_client, namespace, CertSettings(),
                                   default_targets(render.operator_webhook_secret, render.injector_secret))
    certs.setup(mgr)
    reconciler = OperatorConfigReconciler(mgr.server_client, mgr.client, namespace, render, recorder,
                                          set_log_level=levels.append, certs=CertSettings(),
                                          on_webhooks_applied=certs.trigger)
    reconciler.setup(mgr)
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            mgr.start(stop)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield reconciler
    finally:
        stop.set()
        thread.join(60)
        recorder.stop()
        assert not errors, errors


def get_or_none(client: Client, kind: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    try:
        return client.get(kind, name, namespace)
    except NotFound:
        return None


def ready(client: Client, namespace: str) -> dict[str, Any] | None:
    cfg = get_or_none(client, SRIOV_OPERATOR_CONFIG, "default", namespace)
    for cond in ((cfg or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == "Ready" and cond["status"] == "True":
            return cfg
    return None


def template_spec(ds: dict[str, Any]) -> dict[str, Any]:
    return dict(ds["spec"]["template"]["spec"])


def test_daemonsets_rendered_applied_and_updated(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    selector = {"feature.example.com/sriov": "true"}
    client.create(SRIOV_OPERATOR_CONFIG, {"metadata": {"name": "default", "namespace": namespace}, "spec": {
        "configDaemonNodeSelector": selector, "logLevel": 2, "enableInjector": False,
        "enableOperatorWebhook": False}})
    levels: list[str] = []
    with running(kubeconfig, namespace, levels) as reconciler:
        cfg = wait_for(lambda: ready(client, namespace), 60, "Ready=True on the operator config")
        assert cfg["status"]["conditions"][0]["reason"] == consts.REASON_OPERATOR_CONFIG_READY
        assert consts.OPERATOR_CONFIG_FINALIZER in cfg["metadata"]["finalizers"]
        assert levels == ["debug"]

        daemon = client.get(DAEMON_SET, workloads.CONFIG_DAEMON_NAME, namespace)
        plugin = client.get(DAEMON_SET, workloads.DEVICE_PLUGIN_NAME, namespace)
        for ds in (daemon, plugin):
            (ref,) = ds["metadata"]["ownerReferences"]
            assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
                "SriovOperatorConfig", "default", cfg["metadata"]["uid"], True)
        assert template_spec(daemon)["nodeSelector"] == selector
        assert template_spec(daemon)["containers"][0]["image"] == TEST_IMAGES["SRIOV_NETWORK_CONFIG_DAEMON_IMAGE"]
        assert template_spec(plugin)["nodeSelector"] == {
            **selector, consts.DEVICE_PLUGIN_LABEL: consts.DEVICE_PLUGIN_LABEL_ENABLED}
        assert "--resource-prefix=openshift.io" in template_spec(plugin)["containers"][0]["args"]

        # A reconcile with nothing changed writes nothing (server defaults do not count as drift).
        rvs = [d["metadata"]["resourceVersion"] for d in (daemon, plugin)]
        reconciler.reconcile(Request(namespace, "default"))
        assert [client.get(DAEMON_SET, n, namespace)["metadata"]["resourceVersion"]
                for n in (workloads.CONFIG_DAEMON_NAME, workloads.DEVICE_PLUGIN_NAME)] == rvs

        # A change of the config is rolled out.
        new_selector = {"node-role.kubernetes.io/sriov": ""}
        client.patch(SRIOV_OPERATOR_CONFIG, "default", {"spec": {
            "configDaemonNodeSelector": {**dict.fromkeys(selector), **new_selector}, "useCDI": True,
            "logLevel": 0}}, namespace)
        wait_for(lambda: template_spec(client.get(DAEMON_SET, workloads.CONFIG_DAEMON_NAME, namespace))
                 ["nodeSelector"] == new_selector, 30, "the config daemon moved to the new selector")
        wait_for(lambda: "--use-cdi" in template_spec(client.get(DAEMON_SET, workloads.DEVICE_PLUGIN_NAME,
                                                                 namespace))["containers"][0]["args"],
                 30, "the device plugin started with --use-cdi")
        wait_for(lambda: levels[-1:] == ["info"], 30, "the log level back to info")

        # Someone edits a DaemonSet we own: the controller puts it back.
        live = client.get(DAEMON_SET, workloads.CONFIG_DAEMON_NAME, namespace)
        live["spec"]["template"]["spec"]["containers"][0]["image"] = "example.com/hijacked:latest"
        client.update(DAEMON_SET, live)
        wait_for(lambda: template_spec(client.get(DAEMON_SET, workloads.CONFIG_DAEMON_NAME, namespace))
                 ["containers"][0]["image"] == TEST_IMAGES["SRIOV_NETWORK_CONFIG_DAEMON_IMAGE"], 30,
                 "the config daemon's image restored")

        # The injector (failurePolicy Ignore, safe on a shared API server) comes and goes with its flag.
        client.patch(SRIOV_OPERATOR_CONFIG, "default", {"spec": {"enableInjector": True}}, namespace)
        hook = wait_for(lambda: get_or_none(client, MUTATING_WEBHOOK_CONFIGURATION,
                                            consts.INJECTOR_WEBHOOK_CONFIG_NAME), 30, "the injector webhook")
        assert hook["webhooks"][0]["failurePolicy"] == "Ignore"
        assert hook["webhooks"][0]["clientConfig"]["service"] == {
            "name": workloads.INJECTOR_SERVICE, "namespace": namespace, "path": "/mutate", "port": 443}
        assert client.get(DAEMON_SET, workloads.INJECTOR_NAME, namespace)
        svc = client.get(SERVICE, workloads.INJECTOR_SERVICE, namespace)
        cluster_ip = svc["spec"]["clusterIP"]
        reconciler.reconcile(Request(namespace, "default"))
        assert client.get(SERVICE, workloads.INJECTOR_SERVICE, namespace)["spec"]["clusterIP"] == cluster_ip
        # The injector's switches as upstream ships them (hugepage downward API on); a user's edit stays.
        switches = client.get(CONFIG_MAP, consts.INJECTOR_CONTROL_SWITCHES_CONFIGMAP, namespace)
        assert json.loads(switches["data"]["config.json"]) == {"features": {"enableHugePageDownApi": True}}
        assert switches["metadata"]["ownerReferences"][0]["kind"] == "SriovOperatorConfig"
        switches["data"]["config.json"] = '{"features": {"enableHonorExistingResources": true}}'
        client.update(CONFIG_MAP, switches)
        reconciler.reconcile(Request(namespace, "default"))
        assert client.get(CONFIG_MAP, consts.INJECTOR_CONTROL_SWITCHES_CONFIGMAP, namespace)["data"] == \
            switches["data"]

        # Deleting the config removes the cluster-scoped webhook configuration, then the finalizer.
        client.delete(SRIOV_OPERATOR_CONFIG, "default", namespace)
        wait_for(lambda: get_or_none(client, SRIOV_OPERATOR_CONFIG, "default", namespace) is None, 30,
                 "the operator config gone once its finalizer ran")
        assert get_or_none(client, MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME) is None


def _ca_bundle(config: dict[str, Any]) -> bytes:
    (bundle,) = {hook["clientConfig"].get("caBundle", "") for hook in config["webhooks"]}
    return base64.b64decode(bundle)


def _secret_data(client: Client, name: str, namespace: str) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in client.get(SECRET, name, namespace)["data"].items()}


def test_operator_webhook_rendered_when_enabled(kubeconfig: Path, namespace: str) -> None:
    """Both webhooks with self-managed certificates: the certificate controller creates the CA and
    serving Secrets and writes the CA into `caBundle` of both webhook configurations.
    Checked with the manager stopped right after: a Fail webhook without a server behind it would
    refuse every SR-IOV write on the shared API server."""
    client = client_for(kubeconfig)
    client.create(SRIOV_OPERATOR_CONFIG, {"metadata": {"name": "default", "namespace": namespace}, "spec": {
        "enableOperatorWebhook": True, "enableInjector": True}})
    names = (VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME), (
        MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME), (
        MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME)

    def bundles_written() -> bool:
        configs = [get_or_none(client, kind, name) for kind, name in names]
        return all(c is not None and _ca_bundle(c) for c in configs)

    try:
        with running(kubeconfig, namespace, []):
            wait_for(lambda: ready(client, namespace), 60, "Ready=True")
            wait_for(bundles_written, 60, "caBundle in the three webhook configurations")
        validating = client.get(VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME)
        mutating = client.get(MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME)
        for cfg, path in ((validating, "/validating-custom-resource"), (mutating, "/mutating-custom-resource")):
            (hook,) = cfg["webhooks"]
            assert hook["failurePolicy"] == "Fail" and hook["sideEffects"] == "None"
            assert hook["clientConfig"]["service"]["name"] == workloads.OPERATOR_WEBHOOK_SERVICE
            assert hook["clientConfig"]["service"]["path"] == path
        assert client.get(DAEMON_SET, workloads.OPERATOR_WEBHOOK_NAME, namespace)
        assert client.get(SERVICE, workloads.OPERATOR_WEBHOOK_SERVICE, namespace)

        ca = _secret_data(client, CertSettings().ca_secret, namespace)
        (ca_cert,) = pki.parse_bundle(ca["ca-bundle.crt"])
        for kind, name in names:
            assert pki.parse_bundle(_ca_bundle(client.get(kind, name))) == [ca_cert], (kind.kind, name)
        for secret, service in (("operator-webhook-cert", workloads.OPERATOR_WEBHOOK_SERVICE),
                                ("network-resources-injector-cert", workloads.INJECTOR_SERVICE)):
            data = _secret_data(client, secret, namespace)
            assert client.get(SECRET, secret, namespace)["type"] == "kubernetes.io/tls"
            serving = pki.load_pair(data["tls.crt"], data["tls.key"])
            assert serving is not None and pki.signed_by(serving.cert, ca_cert)
            assert f"{service}.{namespace}.svc" in pki.dns_names(serving.cert)
            assert pki.parse_bundle(data["ca.crt"]) == [ca_cert]
        # The DaemonSet mounts exactly that Secret.
        assert template_spec(client.get(DAEMON_SET, workloads.INJECTOR_NAME, namespace))["volumes"] == [
            {"name": "tls", "secret": {"secretName": "network-resources-injector-cert", "defaultMode": 420}}]
    finally:
        for kind, name in names:
            try:
                client.delete(kind, name)
            except NotFound:
                pass
        client.patch(SRIOV_OPERATOR_CONFIG, "default", {"metadata": {"finalizers": None}}, namespace)


def test_sync_failure_is_reported_on_the_ready_condition(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    client.create(SRIOV_OPERATOR_CONFIG, {"metadata": {"name": "default", "namespace": namespace}, "spec": {}})
    no_images = RenderSettings.from_env(namespace, {"RESOURCE_PREFIX": "openshift.io"})
    mgr = Manager(client, name=f"opconfig-fail-{namespace}", namespaces={namespace})
    reconciler = OperatorConfigReconciler(client, mgr.client, namespace, no_images)
    reconciler.setup(mgr)
    stop = threading.Event()
    thread = threading.Thread(target=mgr.start, args=(stop,), daemon=True)
    thread.start()

    def failed() -> dict[str, Any] | None:
        cfg = client.get(SRIOV_OPERATOR_CONFIG, "default", namespace)
        for cond in (cfg.get("status") or {}).get("conditions") or []:
            if cond["type"] == "Ready" and cond["status"] == "False":
                return dict(cond)
        return None

    try:
        cond = wait_for(failed, 30, "Ready=False")
    finally:
        stop.set()
        thread.join(60)
    assert cond["reason"] == consts.REASON_OPERATOR_CONFIG_SYNC_FAILED
    assert "SRIOV_NETWORK_CONFIG_DAEMON_IMAGE" in cond["message"]
    client.patch(SRIOV_OPERATOR_CONFIG, "default", {"metadata": {"finalizers": None}}, namespace)


def test_metrics_exporter_follows_its_feature_gate(kubeconfig: Path, namespace: str) -> None:
    from sriovop.render import metrics_exporter

    client = client_for(kubeconfig)
    client.create(SRIOV_OPERATOR_CONFIG, {"metadata": {"name": "default", "namespace": namespace}, "spec": {
        "featureGates": {"metricsExporter": True}, "configDaemonNodeSelector": {"sriov": "yes"}}})
    with running(kubeconfig, namespace, []):
        ds = wait_for(lambda: get_or_none(client, DAEMON_SET, metrics_exporter.NAME, namespace), 60,
                      "the metrics-exporter DaemonSet")
        # the Service is applied after the DaemonSet, in the same reconcile
        svc = wait_for(lambda: get_or_none(client, SERVICE, metrics_exporter.SERVICE_NAME, namespace), 60,
                       "the metrics-exporter Service")
        spec = template_spec(ds)
        (container,) = spec["containers"]  # no kube-rbac-proxy image configured: the exporter alone
        assert container["command"] == ["sriovop", "metrics-exporter"]
        assert container["image"] == TEST_IMAGES["SRIOV_NETWORK_CONFIG_DAEMON_IMAGE"]
        assert "--collector.kubepoddevice=true" in container["args"]
        assert "--web.listen-address=$(HOST_IP):9110" in container["args"]
        assert spec["nodeSelector"] == {"sriov": "yes"} and spec["hostNetwork"] is True
        assert spec["serviceAccountName"] == "metrics-exporter-sa"
        sockets = [v for v in spec["volumes"] if v["name"] == "kubeletsocket"]
        assert sockets == [{"name": "kubeletsocket", "hostPath": {
            "path": "/var/lib/kubelet/pod-resources/kubelet.sock", "type": "Socket"}}]
        assert svc["metadata"]["labels"] == {"name": metrics_exporter.SERVICE_NAME}
        assert svc["metadata"]["annotations"]["prometheus.io/target"] == "true"
        assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [("sriov-network-metrics", 9110)]
        assert svc["spec"]["selector"] == ds["spec"]["selector"]["matchLabels"]
        assert ds["metadata"]["ownerReferences"][0]["kind"] == "SriovOperatorConfig"

        client.patch(SRIOV_OPERATOR_CONFIG, "default", {"spec": {"featureGates": {"metricsExporter": False}}},
                     namespace=namespace)
        wait_for(lambda: get_or_none(client, DAEMON_SET, metrics_exporter.NAME, namespace) is None, 60,
                 "the metrics-exporter DaemonSet deleted with the gate off")
        wait_for(lambda: get_or_none(client, SERVICE, metrics_exporter.SERVICE_NAME, namespace) is None, 60,
                 "the metrics-exporter Service deleted with the gate off")
