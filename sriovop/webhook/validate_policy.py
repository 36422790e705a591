"""SriovNetworkNodePolicy validation: scope (operator namespace, `default`, DELETE), then upstream's
static and dynamic rules, with messages that name the object, the field and the reason."""

from __future__ import annotations

from dataclasses import replace

from sriovop.api.v1 import consts
from sriovop.webhook.admission import AdmissionRequest, Denied, Verdict
from sriovop.webhook.cluster_view import ClusterView
from sriovop.webhook.fields import as_map, loose_str
from sriovop.webhook.policy_dynamic import dynamic_checks
from sriovop.webhook.policy_spec import PolicySpec, parse_policy
from sriovop.webhook.policy_static import static_checks
from sriovop.webhook.settings import WebhookSettings

__all__ = ["dynamic_checks", "static_checks", "validate_policy"]


def validate_policy(request: AdmissionRequest, view: ClusterView, settings: WebhookSettings) -> Verdict:
    obj = request.subject
    meta = as_map(obj.get("metadata"))
    name = loose_str(meta.get("name")) or request.name
    namespace = loose_str(meta.get("namespace")) or request.namespace
    if name == consts.DEFAULT_POLICY_NAME and namespace == settings.namespace:
        return Verdict.allow()
    warnings = []
    if namespace != settings.namespace:
        warnings.append(
            f"{name} is created or updated but not used. Only policy in {settings.namespace} namespace is respected."
        )
    if request.operation == "DELETE":
        return Verdict.allow(warnings)
    try:
        policy = parse_policy(obj)
        policy = _with_identity(policy, name, namespace)
        static_checks(policy, view.supported_nics(), settings.dev_mode)
        dynamic_checks(policy, view, settings.dev_mode)
    except Denied as denied:
        return Verdict.deny(request, denied, warnings)
    return Verdict.allow(warnings)


def _with_identity(policy: PolicySpec, name: str, namespace: str) -> PolicySpec:
    if policy.name == name and policy.namespace == namespace:
        return policy
    return replace(policy, name=name, namespace=namespace)
