"""Webhook configuration rendering: upstream names, rules, policies, and both clientConfig forms."""

from __future__ import annotations

import base64

import pytest

from sriovop.render import webhook_configs as wc
from sriovop.webhook import handler


def test_paths_match_the_server_routes() -> None:
    assert (wc.MUTATING_PATH, wc.VALIDATING_PATH, wc.POD_MUTATING_PATH) == (
        handler.MUTATING_PATH, handler.VALIDATING_PATH, handler.POD_MUTATING_PATH)


def test_operator_configs_in_cluster() -> None:
    validating, mutating = wc.operator_webhook_configs(
        wc.Endpoint.service(wc.OPERATOR_WEBHOOK_SERVICE, "sriov-network-operator", ca_bundle=b"CA"))
    assert validating["kind"] == "ValidatingWebhookConfiguration"
    assert mutating["kind"] == "MutatingWebhookConfiguration"
    assert validating["metadata"]["name"] == mutating["metadata"]["name"] == "sriov-operator-webhook-config"
    (v,), (m,) = validating["webhooks"], mutating["webhooks"]
    assert v["name"] == m["name"] == "operator-webhook.sriovnetwork.openshift.io"
    for hook in (v, m):
        assert hook["failurePolicy"] == "Fail" and hook["sideEffects"] == "None"
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["clientConfig"]["caBundle"] == base64.b64encode(b"CA").decode()
        assert "namespaceSelector" not in hook
    assert v["clientConfig"]["service"] == {"name": "operator-webhook-service",
                                            "namespace": "sriov-network-operator",
                                            "path": "/validating-custom-resource", "port": 443}
    assert m["clientConfig"]["service"]["path"] == "/mutating-custom-resource"
    assert [(r["operations"], r["resources"]) for r in v["rules"]] == [
        (["CREATE", "UPDATE", "DELETE"],
         ["sriovnetworknodepolicies", "sriovoperatorconfigs", "sriovnetworkpoolconfigs"]),
        (["CREATE", "UPDATE"], ["sriovnetworks", "sriovibnetworks", "ovsnetworks"]),
    ]
    assert all(r["apiGroups"] == ["sriovnetwork.openshift.io"] for r in v["rules"] + m["rules"])
    assert [(r["operations"], r["resources"]) for r in m["rules"]] == [
        (["CREATE", "UPDATE"], ["sriovnetworknodepolicies"])]


def test_injector_config_defaults_to_ignore_and_match_condition_to_fail() -> None:
    endpoint = wc.Endpoint.url("https://127.0.0.1:9443/", b"CA")
    cfg = wc.injector_webhook_config(endpoint, namespace_selector={"matchLabels": {"t": "1"}})
    (hook,) = cfg["webhooks"]
    assert cfg["metadata"]["name"] == "network-resources-injector-config"
    assert hook["name"] == "network-resources-injector-config.k8s.io"
    assert hook["failurePolicy"] == "Ignore" and hook["sideEffects"] == "None"
    assert hook["clientConfig"] == {"url": "https://127.0.0.1:9443/mutate", "caBundle": "Q0E="}
    assert hook["rules"] == [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                              "resources": ["pods"], "scope": "*"}]
    assert hook["namespaceSelector"] == {"matchLabels": {"t": "1"}}
    gated = wc.injector_webhook_config(endpoint, match_condition=True)["webhooks"][0]
    assert gated["failurePolicy"] == "Fail"
    assert "k8s.v1.cni.cncf.io/networks" in gated["matchConditions"][0]["expression"]
    assert "v1.multus-cni.io/default-network" in gated["matchConditions"][0]["expression"]


def test_failure_policy_flip_for_shutdown() -> None:
    validating, _ = wc.operator_webhook_configs(wc.Endpoint.service("s", "ns"))
    flipped = wc.with_failure_policy(validating, "Ignore")
    assert [h["failurePolicy"] for h in flipped["webhooks"]] == ["Ignore"]
    assert validating["webhooks"][0]["failurePolicy"] == "Fail"


def test_ca_injection_annotations() -> None:
    validating, mutating = wc.operator_webhook_configs(
        wc.Endpoint.service("s", "ns"), annotations=wc.cert_manager_ca_from("ns/operator-webhook-cert"))
    for cfg in (validating, mutating):
        assert cfg["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": "ns/operator-webhook-cert"}
        assert "caBundle" not in cfg["webhooks"][0]["clientConfig"]
    injector = wc.injector_webhook_config(wc.Endpoint.service(wc.INJECTOR_SERVICE, "ns"),
                                          annotations=wc.OPENSHIFT_INJECT_CABUNDLE)
    assert injector["metadata"]["annotations"] == {"service.beta.openshift.io/inject-cabundle": "true"}
    assert injector["webhooks"][0]["clientConfig"]["service"]["name"] == "network-resources-injector-service"


def test_url_endpoint_must_be_https() -> None:
    with pytest.raises(ValueError, match="must start with https://"):
        wc.Endpoint.url("http://127.0.0.1", b"CA")
