"""One SriovNetworkNodePolicy judged by every rule: scope (operator namespace, the `default` policy,
DELETE), then upstream's static and dynamic rules.

The webhook turns the answer into an AdmissionReview verdict; `sriovop plan` reports it as the
webhook's verdict when a webhook enforces the rules, and as warnings when none does (the API server
then stores the policy and the operator applies it).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sriovop.api.v1 import consts
from sriovop.policyrules.denied import Denied
from sriovop.policyrules.dynamic import dynamic_checks
from sriovop.policyrules.fields import as_map, loose_str
from sriovop.policyrules.spec import PolicySpec, parse_policy
from sriovop.policyrules.static import static_checks
from sriovop.policyrules.view import ClusterView


@dataclass(frozen=True)
class Judgement:
    """`denied` is the first rule that refuses the policy (None: every rule accepts it)."""

    denied: Denied | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return self.denied is None


def judge_policy(obj: dict[str, Any], name: str, namespace: str, operation: str, operator_namespace: str,
                 view: ClusterView, dev_mode: bool = False) -> Judgement:
    """`obj` is the policy being written (the old one for DELETE); `name`/`namespace` those of the
    request when the object lacks them."""
    meta = as_map(obj.get("metadata"))
    name = loose_str(meta.get("name")) or name
    namespace = loose_str(meta.get("namespace")) or namespace
    if name == consts.DEFAULT_POLICY_NAME and namespace == operator_namespace:
        return Judgement()
    warnings = []
    if namespace != operator_namespace:
        warnings.append(
            f"{name} is created or updated but not used. Only policy in {operator_namespace} namespace is respected."
        )
    if operation == "DELETE":
        return Judgement(warnings=warnings)
    try:
        policy = _with_identity(parse_policy(obj), name, namespace)
        static_checks(policy, view.supported_nics(), dev_mode)
        dynamic_checks(policy, view, dev_mode)
    except Denied as denied:
        return Judgement(denied, warnings)
    return Judgement(warnings=warnings)


def _with_identity(policy: PolicySpec, name: str, namespace: str) -> PolicySpec:
    if policy.name == name and policy.namespace == namespace:
        return policy
    return replace(policy, name=name, namespace=namespace)
