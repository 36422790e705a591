"""The metrics exporter's DaemonSet and Service (feature gate metricsExporter), upstream's shape."""

from __future__ import annotations

import pytest

from sriovop.render import metrics_exporter as me
from sriovop.render.settings import RenderSettings, SettingsError

SETTINGS = RenderSettings(namespace="sriov-network-operator", config_daemon_image="example.com/sriovop:1",
                          image_pull_secrets=("regcred",))


def test_behind_kube_rbac_proxy_when_its_image_is_given() -> None:
    exporter = me.ExporterSettings.from_env({"METRICS_EXPORTER_KUBE_RBAC_PROXY_IMAGE": "example.com/krp:1",
                                             "METRICS_EXPORTER_PORT": "9200",
                                             "METRICS_EXPORTER_IMAGE": "example.com/exporter:2"}, SETTINGS)
    ds = me.daemonset(SETTINGS, exporter, {"spec": {}})
    spec = ds["spec"]["template"]["spec"]
    exporter_c, proxy = spec["containers"]
    assert exporter_c["image"] == "example.com/exporter:2"
    assert "--web.listen-address=127.0.0.1:9200" in exporter_c["args"] and "ports" not in exporter_c
    assert proxy["image"] == "example.com/krp:1"
    assert "--secure-listen-address=[$(HOST_IP)]:9200" in proxy["args"]
    assert "--upstream=http://127.0.0.1:9200/" in proxy["args"]
    assert {"name": "metrics-certs", "secret": {"defaultMode": 420, "secretName": "metrics-exporter-cert"}} \
        in spec["volumes"]
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert spec["nodeSelector"] == {"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux"}
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert me.service(SETTINGS, exporter)["spec"]["ports"][0]["port"] == 9200


@pytest.mark.parametrize(("env", "settings", "fragment"), [
    ({"METRICS_EXPORTER_PORT": "http"}, SETTINGS, "METRICS_EXPORTER_PORT='http'"),
    ({"METRICS_EXPORTER_PORT": "70000"}, SETTINGS, "between 1 and 65535"),
    ({}, RenderSettings(namespace="x"), "METRICS_EXPORTER_IMAGE"),
])
def test_bad_settings_name_the_variable(env: dict[str, str], settings: RenderSettings, fragment: str) -> None:
    with pytest.raises(SettingsError) as info:
        me.ExporterSettings.from_env(env, settings)
    assert fragment in str(info.value)
