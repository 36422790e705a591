"""Validating and Mutating webhook configurations, with upstream's names, rules and policies.

The operator renders them with a `service` clientConfig (in-cluster, CA injected by cert-manager or
OpenShift, or given inline); tests and the demo point them at a local server with `url` + `caBundle`.
`namespace_selector`/`object_selector` exist so tests on a shared API server can confine a webhook
to their own namespaces.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import GROUP, VERSION

OPERATOR_WEBHOOK_SERVICE = "operator-webhook-service"
INJECTOR_SERVICE = "network-resources-injector-service"
MUTATING_PATH = "/mutating-custom-resource"
VALIDATING_PATH = "/validating-custom-resource"
POD_MUTATING_PATH = "/mutate"
ADMISSION_API = "admissionregistration.k8s.io/v1"

FailurePolicy = Literal["Fail", "Ignore"]

#: What `sriovop webhook` reads (ClusterRole rules; the integration tests run it with exactly these).
#: list+watch serve the informer-backed default; `--no-cache` (live reads) needs only get and list.
WEBHOOK_RBAC_RULES: tuple[dict[str, list[str]], ...] = (
    {"apiGroups": [""], "resources": ["nodes", "configmaps"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [GROUP], "resources": ["sriovnetworknodestates", "sriovnetworknodepolicies"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["k8s.cni.cncf.io"], "resources": ["network-attachment-definitions"], "verbs": ["get"]},
)
Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the API server calls: a Service in the operator namespace, or a URL (tests, demo)."""

    service_name: str = ""
    service_namespace: str = ""
    service_port: int = 443
    url_base: str = ""
    ca_bundle: bytes | None = None

    @classmethod
    def service(cls, name: str, namespace: str, port: int = 443, ca_bundle: bytes | None = None) -> Endpoint:
        return cls(service_name=name, service_namespace=namespace, service_port=port, ca_bundle=ca_bundle)

    @classmethod
    def url(cls, base: str, ca_bundle: bytes) -> Endpoint:
        if not base.startswith("https://"):
            raise ValueError(f"webhook URL {base!r} must start with https://")
        return cls(url_base=base.rstrip("/"), ca_bundle=ca_bundle)

    def client_config(self, path: str) -> Obj:
        cfg: Obj
        if self.url_base:
            cfg = {"url": self.url_base + path}
        else:
            cfg = {"service": {"name": self.service_name, "namespace": self.service_namespace, "path": path,
                               "port": self.service_port}}
        if self.ca_bundle:
            cfg["caBundle"] = base64.b64encode(self.ca_bundle).decode()
        return cfg


def _rule(operations: list[str], resources: list[str], group: str = GROUP, version: str = VERSION) -> Obj:
    return {"operations": operations, "apiGroups": [group], "apiVersions": [version], "resources": resources,
            "scope": "*"}


def _webhook(name: str, endpoint: Endpoint, path: str, rules: list[Obj], failure_policy: FailurePolicy,
             namespace_selector: Mapping[str, Any] | None, object_selector: Mapping[str, Any] | None) -> Obj:
    hook: Obj = {
        "name": name,
        "clientConfig": endpoint.client_config(path),
        "rules": rules,
        "failurePolicy": failure_policy,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 10,
    }
    if namespace_selector is not None:
        hook["namespaceSelector"] = dict(namespace_selector)
    if object_selector is not None:
        hook["objectSelector"] = dict(object_selector)
    return hook


#: Annotations that make a CA injector fill in caBundle: OpenShift's service CA, or cert-manager's
#: (`cert_manager_ca_from("<ns>/<certificate>")`).
OPENSHIFT_INJECT_CABUNDLE = {"service.beta.openshift.io/inject-cabundle": "true"}


def cert_manager_ca_from(namespace_and_certificate: str) -> dict[str, str]:
    return {"cert-manager.io/inject-ca-from": namespace_and_certificate}


def _config(kind: str, name: str, hooks: list[Obj], labels: Mapping[str, str] | None,
            annotations: Mapping[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": ADMISSION_API, "kind": kind, "metadata": meta, "webhooks": hooks}


def operator_webhook_configs(
    endpoint: Endpoint,
    *,
    name: str = consts.OPERATOR_WEBHOOK_CONFIG_NAME,
    failure_policy: FailurePolicy = "Fail",
    namespace_selector: Mapping[str, Any] | None = None,
    object_selector: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> tuple[Obj, Obj]:
    """(ValidatingWebhookConfiguration, MutatingWebhookConfiguration), both named `name`.

    Mutating: CREATE/UPDATE of policies. Validating: CREATE/UPDATE/DELETE of policies, operator configs
    and pool configs; CREATE/UPDATE of the three network kinds."""
    validating = _webhook(
        consts.OPERATOR_WEBHOOK_NAME, endpoint, VALIDATING_PATH,
        [
            _rule(["CREATE", "UPDATE", "DELETE"],
                  ["sriovnetworknodepolicies", "sriovoperatorconfigs", "sriovnetworkpoolconfigs"]),
            _rule(["CREATE", "UPDATE"], ["sriovnetworks", "sriovibnetworks", "ovsnetworks"]),
        ],
        failure_policy, namespace_selector, object_selector,
    )
    mutating = _webhook(
        consts.OPERATOR_WEBHOOK_NAME, endpoint, MUTATING_PATH,
        [_rule(["CREATE", "UPDATE"], ["sriovnetworknodepolicies"])],
        failure_policy, namespace_selector, object_selector,
    )
    mutating["reinvocationPolicy"] = "Never"
    return (
        _config("ValidatingWebhookConfiguration", name, [validating], labels, annotations),
        _config("MutatingWebhookConfiguration", name, [mutating], labels, annotations),
    )


def injector_webhook_config(
    endpoint: Endpoint,
    *,
    name: str = consts.INJECTOR_WEBHOOK_CONFIG_NAME,
    match_condition: bool = False,
    failure_policy: FailurePolicy | None = None,
    namespace_selector: Mapping[str, Any] | None = None,
    object_selector: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    """The pod injector's MutatingWebhookConfiguration: `Ignore` by default so pods are still admitted
    when the injector is down; with the `resourceInjectorMatchCondition` gate `Fail`, but only called
    for pods that carry the networks or the default-network annotation (a CEL matchCondition)."""
    policy: FailurePolicy = failure_policy or ("Fail" if match_condition else "Ignore")
    hook = _webhook(
        consts.INJECTOR_WEBHOOK_NAME, endpoint, POD_MUTATING_PATH,
        [_rule(["CREATE"], ["pods"], group="", version="v1")],
        policy, namespace_selector, object_selector,
    )
    hook["reinvocationPolicy"] = "Never"
    if match_condition:
        # Upstream's condition names only the networks annotation; the default-network annotation
        # triggers injection too, so pods carrying it must reach the injector as well.
        wanted = " || ".join(f"'{a}' in object.metadata.annotations"
                             for a in (consts.POD_NETWORKS_ANNOTATION, consts.POD_DEFAULT_NETWORK_ANNOTATION))
        hook["matchConditions"] = [{
            "name": "include-networks-annotation",
            "expression": f"has(object.metadata.annotations) && ({wanted})",
        }]
    return _config("MutatingWebhookConfiguration", name, [hook], labels, annotations)


def with_failure_policy(config: Mapping[str, Any], failure_policy: FailurePolicy) -> Obj:
    """A copy with every webhook's failurePolicy set (the operator's shutdown sets `Ignore`)."""
    out = dict(config)
    out["webhooks"] = [{**hook, "failurePolicy": failure_policy} for hook in config.get("webhooks") or []]
    return out
