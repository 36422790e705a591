"""What the operator-config controller renders for each certificate mode (on a fake API)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_OPERATOR_CONFIG
from sriovop.controllers.operator_config import OperatorConfigReconciler
from sriovop.controllers.webhook_certs import CertMode, CertSettings
from sriovop.render import workloads
from sriovop.render.settings import RenderSettings
from sriovop.runtime.kinds import MUTATING_WEBHOOK_CONFIGURATION, SERVICE, VALIDATING_WEBHOOK_CONFIGURATION
from test.support.controllers_fake_api import FakeApi

NS = "sriov-network-operator"
IMAGES = {"SRIOV_NETWORK_CONFIG_DAEMON_IMAGE": "d", "SRIOV_DEVICE_PLUGIN_IMAGE": "p", "SRIOV_CNI_IMAGE": "c",
          "SRIOV_INFINIBAND_CNI_IMAGE": "i", "NETWORK_RESOURCES_INJECTOR_IMAGE": "w",
          "SRIOV_NETWORK_WEBHOOK_IMAGE": "w"}
CONFIGS = ((VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
           (MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
           (MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME))


def _sync(certs: CertSettings) -> tuple[FakeApi, list[str]]:
    api, triggered = FakeApi(), []
    config = api.add(SRIOV_OPERATOR_CONFIG, {"metadata": {"name": "default", "namespace": NS}, "spec": {
        "enableOperatorWebhook": True, "enableInjector": True}})
    reconciler = OperatorConfigReconciler(api, api, NS, RenderSettings.from_env(NS, IMAGES), certs=certs,
                                          on_webhooks_applied=lambda: triggered.append("certs"))
    reconciler.sync(config)
    return api, triggered


def _client_configs(api: FakeApi) -> list[dict[str, Any]]:
    return [hook["clientConfig"] for kind, name in CONFIGS for hook in api.get(kind, name)["webhooks"]]


def test_self_managed_leaves_the_ca_bundle_to_the_certificate_controller_and_triggers_it() -> None:
    api, triggered = _sync(CertSettings(mode=CertMode.SELF_MANAGED))
    assert all("caBundle" not in cc for cc in _client_configs(api))
    assert triggered == ["certs", "certs"]  # after each webhook's configurations were applied
    for kind, name in CONFIGS:
        annotations = api.get(kind, name)["metadata"].get("annotations") or {}
        assert not [k for k in annotations if "inject" in k]


def test_custom_mode_writes_the_given_ca_bundles() -> None:
    api, triggered = _sync(CertSettings(mode=CertMode.CUSTOM, operator_webhook_ca=b"OP", injector_ca=b"INJ"))
    assert [cc["caBundle"] for cc in _client_configs(api)] == [base64.b64encode(b).decode()
                                                               for b in (b"OP", b"OP", b"INJ")]
    assert triggered == []


@pytest.mark.parametrize(("mode", "annotation"), [
    (CertMode.CERT_MANAGER, ("cert-manager.io/inject-ca-from", f"{NS}/{{secret}}")),
    (CertMode.OPENSHIFT, ("service.beta.openshift.io/inject-cabundle", "true")),
])
def test_ca_injectors_are_asked_by_annotation(mode: CertMode, annotation: tuple[str, str]) -> None:
    api, triggered = _sync(CertSettings(mode=mode))
    secrets = ("operator-webhook-cert", "operator-webhook-cert", "network-resources-injector-cert")
    for (kind, name), secret in zip(CONFIGS, secrets, strict=True):
        annotations = api.get(kind, name)["metadata"]["annotations"]
        assert annotations[annotation[0]] == annotation[1].format(secret=secret)
    assert all("caBundle" not in cc for cc in _client_configs(api))
    assert triggered == []
    service = api.get(SERVICE, workloads.OPERATOR_WEBHOOK_SERVICE, NS)["metadata"].get("annotations") or {}
    openshift = service.get("service.beta.openshift.io/serving-cert-secret-name")
    assert openshift == ("operator-webhook-cert" if mode == CertMode.OPENSHIFT else None)
