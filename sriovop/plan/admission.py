"""What the API server does with each policy write of a plan, in file order (as `kubectl apply` sends
them), each judged against the cluster plus the policies stored before it.

The API server's schema check and defaults always run. Then, by webhook mode (`sriovop.plan.webhooks`):
- the mutating webhook's defaults apply only when it answers;
- the policy rules (`sriovop.policyrules.judge`) deny only when a validating webhook enforces them.
  Without one, each would-be denial is a warning that names the field and the reason, and the policy
  is stored and applied by the operator like any other;
- an unreachable webhook with failurePolicy Fail refuses every write.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY
from sriovop.api.v1.policydefaults import apply_policy_defaults
from sriovop.api.v1.schema.defaults import apply_defaults
from sriovop.api.v1.schema.validate import validate_object
from sriovop.plan.snapshot import Snapshot
from sriovop.plan.webhooks import describe, when_unreachable
from sriovop.policyrules.judge import judge_policy
from sriovop.policyrules.view import StaticClusterView

Obj = Mapping[str, Any]


@dataclass
class PolicyAdmission:
    policy: str
    operation: str  # CREATE | UPDATE | DELETE, as in an AdmissionReview
    allowed: bool
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    #: The policy rule a webhook would deny with, when none enforces it: {"field", "reason"}.
    would_deny: dict[str, str] | None = None
    #: The spec as the API server stores it (schema defaults, and the webhook's when it runs).
    stored: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"policy": self.policy, "operation": self.operation, "allowed": self.allowed,
                               "message": self.message, "warnings": list(self.warnings)}
        if self.would_deny is not None:
            out["wouldDeny"] = dict(self.would_deny)
        if self.stored is not None:
            out["storedSpec"] = self.stored
        return out


def admitted_object(policy: Obj, snap: Snapshot) -> dict[str, Any]:
    """The policy as it would be stored: CRD defaults, then the mutating webhook's when it runs."""
    obj = copy.deepcopy(dict(policy))
    obj.setdefault("spec", {})
    apply_defaults(SRIOV_NETWORK_NODE_POLICY, obj)
    if snap.defaults_applied:
        apply_policy_defaults(obj)
    return obj


def _refusal(snap: Snapshot, operation: str) -> str:
    hooks = [h for h in (snap.webhooks.refuses_writes() if snap.webhooks else [])
             if h.kind == "validating" or operation != "DELETE"]
    if not hooks:
        return ""
    problems = "; ".join(f"{describe([h])}: {h.problem}" for h in hooks)
    return f"{problems}. {when_unreachable(hooks[0])}"


def admit(snap: Snapshot, given: Sequence[Obj], delete: bool) -> tuple[list[PolicyAdmission], list[Obj]]:
    """Each given policy judged in order; returns the verdicts and the policies the cluster ends with."""
    current = {p["metadata"]["name"]: p for p in snap.policies}
    verdicts: list[PolicyAdmission] = []
    for raw in given:
        name = raw["metadata"]["name"]
        old = current.get(name)
        obj: dict[str, Any] | None
        if delete:
            if old is None:
                verdicts.append(PolicyAdmission(name, "DELETE", True, warnings=[
                    f"policy {name} does not exist: nothing to delete"]))
                continue
            obj, operation = None, "DELETE"
        else:
            obj = admitted_object(raw, snap)
            operation = "UPDATE" if old is not None else "CREATE"
            errors = validate_object(SRIOV_NETWORK_NODE_POLICY, obj)
            if errors:
                verdicts.append(PolicyAdmission(name, operation, False, "the API server rejects it: " + "; ".join(
                    str(e) for e in errors)))
                continue
        refusal = _refusal(snap, operation)
        if refusal:
            verdicts.append(PolicyAdmission(name, operation, False, f"the API server cannot call its webhook: "
                                                                    f"{refusal}"))
            continue
        view = StaticClusterView(nodes=[dict(n) for n in snap.nodes],
                                 node_states=[dict(s) for s in snap.states.values()],
                                 policies=[dict(p) for p in current.values()], nics=snap.nics)
        subject = obj if obj is not None else dict(old or {})
        judgement = judge_policy(subject, name, snap.namespace, operation, snap.namespace, view)
        verdict = PolicyAdmission(name, operation, True, warnings=list(judgement.warnings))
        if judgement.denied is not None:
            rule = f"{judgement.denied.field}: {judgement.denied.reason}"
            if snap.rules_enforced:
                verdict.allowed = False
                verdict.message = f"the webhook denies {SRIOV_NETWORK_NODE_POLICY.kind} {name}: {rule}"
            else:
                verdict.would_deny = {"field": judgement.denied.field, "reason": judgement.denied.reason}
                verdict.warnings.append(
                    f"policy {name}: the webhook would deny it ({rule}); no policy webhook is enforced, so the API "
                    "server stores it and the operator applies it as planned below")
        verdicts.append(verdict)
        if not verdict.allowed:
            continue
        if obj is not None:
            verdict.stored = copy.deepcopy(obj["spec"])
        if obj is None:
            current.pop(name, None)
        else:
            current[name] = obj
    return verdicts, list(current.values())
