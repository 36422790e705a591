"""RBAC proof helpers: read a kube-apiserver audit log, evaluate RBAC rules over the recorded requests.

The evaluation is RBAC's own matching (rbac/v1 semantics without wildcards, which the manifests never
use): a rule allows a request when its apiGroups, resources (`resource/subresource`), verbs and, if
given, resourceNames match; a Role's rules apply only in its namespace, a ClusterRole bound by a
ClusterRoleBinding everywhere, and by a RoleBinding only in that binding's namespace. The tests
cross-check it against the API server's own SubjectAccessReviews.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION, SRIOV_KINDS
from sriovop.runtime import kinds as core
from sriovop.runtime.kinds import Kind

DECISION = "authorization.k8s.io/decision"
RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
_PLURALS: dict[tuple[str, str], Kind] = {
    (k.api_version, k.kind): k
    for k in (*SRIOV_KINDS, NETWORK_ATTACHMENT_DEFINITION, *(v for v in vars(core).values() if isinstance(v, Kind)))
}


@dataclass(frozen=True, order=True)
class Access:
    """One authorization question, as RBAC sees a request."""

    user: str
    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def full_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def describe(self) -> str:
        where = f" in {self.namespace}" if self.namespace else " (cluster-wide)"
        named = f" {self.name!r}" if self.name else ""
        group = self.group or "core"
        return f"{self.verb} {self.full_resource}.{group}{named}{where}"


@dataclass(frozen=True)
class AuditedRequest:
    access: Access
    decision: str
    code: int
    uri: str
    at: datetime  # requestReceivedTimestamp
    implied: bool = False  # an authorization check made by an admission plugin, not a request


@dataclass(frozen=True)
class Grant:
    """One rule of one role, in the scope its binding gives it (namespace None = every namespace)."""

    role: str  # "ClusterRole/name" or "Role/namespace/name"
    index: int
    rule: Mapping[str, Any]
    namespace: str | None

    @property
    def rule_id(self) -> tuple[str, int]:
        return (self.role, self.index)

    def describe(self) -> str:
        rule = self.rule
        names = f" resourceNames={list(rule['resourceNames'])}" if rule.get("resourceNames") else ""
        return (f"{self.role} rule #{self.index} apiGroups={list(rule.get('apiGroups') or [])} "
                f"resources={list(rule.get('resources') or [])} verbs={list(rule.get('verbs') or [])}{names}")

    def allows(self, access: Access) -> bool:
        if self.namespace is not None and self.namespace != access.namespace:
            return False
        rule = self.rule
        if access.verb not in (rule.get("verbs") or []):
            return False
        if access.group not in (rule.get("apiGroups") or []):
            return False
        if access.full_resource not in (rule.get("resources") or []):
            return False
        names = rule.get("resourceNames") or []
        return not names or access.name in names


def load_rbac(paths: Iterable[Path]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in paths:
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") in RBAC_KINDS)
    return docs


def _subject_matches(subject: Mapping[str, Any], user: str, groups: Sequence[str]) -> bool:
    kind = subject.get("kind")
    if kind == "ServiceAccount":
        return user == f"system:serviceaccount:{subject.get('namespace')}:{subject.get('name')}"
    if kind == "User":
        return user == subject.get("name")
    if kind == "Group":
        return subject.get("name") in groups
    return False


def grants_for(docs: Sequence[Mapping[str, Any]], user: str, groups: Sequence[str]) -> list[Grant]:
    roles = {(d["kind"], d["metadata"].get("namespace") or "", d["metadata"]["name"]): d
             for d in docs if d["kind"] in ("Role", "ClusterRole")}
    out: list[Grant] = []
    for binding in docs:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(_subject_matches(s, user, groups) for s in binding.get("subjects") or []):
            continue
        ref = binding["roleRef"]
        bns = binding["metadata"].get("namespace") or ""
        role_ns = bns if ref["kind"] == "Role" else ""
        role = roles.get((ref["kind"], role_ns, ref["name"]))
        if role is None:
            continue
        label = f"ClusterRole/{ref['name']}" if ref["kind"] == "ClusterRole" else f"Role/{role_ns}/{ref['name']}"
        scope = None if binding["kind"] == "ClusterRoleBinding" else bns
        out.extend(Grant(label, i, rule, scope) for i, rule in enumerate(role.get("rules") or []))
    return out


def allowed_by(grants: Iterable[Grant], access: Access) -> Grant | None:
    return next((g for g in grants if g.allows(access)), None)


def atoms(grant: Grant) -> list[tuple[str, str, str]]:
    """(apiGroup, resource, verb) triples the rule grants."""
    rule = grant.rule
    return [(g, r, v) for g in rule.get("apiGroups") or [] for r in rule.get("resources") or []
            for v in rule.get("verbs") or []]


def _implied_owner_checks(event: Mapping[str, Any], user: str) -> list[Access]:
    """OwnerReferencesPermissionEnforcement: creating an object whose ownerReference sets
    blockOwnerDeletion needs `update` on the owner's `finalizers` subresource."""
    obj = event.get("requestObject") or {}
    if event.get("verb") != "create" or not isinstance(obj, dict):
        return []
    ns = (event.get("objectRef") or {}).get("namespace") or ""
    out = []
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if not ref.get("blockOwnerDeletion"):
            continue
        kind = _PLURALS.get((str(ref.get("apiVersion")), str(ref.get("kind"))))
        if kind is None:
            continue
        out.append(Access(user, "update", kind.group, kind.plural, "finalizers",
                          ns if kind.namespaced else "", str(ref.get("name") or "")))
    return out


@dataclass
class AuditLog:
    requests: list[AuditedRequest] = field(default_factory=list)
    non_resource: list[tuple[str, str, str]] = field(default_factory=list)  # (user, verb, uri)

    @classmethod
    def read(cls, path: Path, users: Iterable[str]) -> AuditLog:
        wanted = set(users)
        seen: set[str] = set()
        log = cls()
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            event = json.loads(line)
            user = (event.get("user") or {}).get("username", "")
            if user not in wanted or event.get("stage") not in ("ResponseStarted", "ResponseComplete", "Panic"):
                continue
            if event["auditID"] in seen:
                continue
            seen.add(event["auditID"])
            decision = (event.get("annotations") or {}).get(DECISION, "")
            ref = event.get("objectRef")
            if ref is None:
                log.non_resource.append((user, event.get("verb", ""), event.get("requestURI", "")))
                continue
            access = Access(user, event["verb"], ref.get("apiGroup") or "", ref.get("resource") or "",
                            ref.get("subresource") or "", ref.get("namespace") or "", ref.get("name") or "")
            code = int((event.get("responseStatus") or {}).get("code") or 0)
            at = datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00"))
            uri = event.get("requestURI", "")
            log.requests.append(AuditedRequest(access, decision, code, uri, at))
            if decision == "allow":
                log.requests.extend(AuditedRequest(a, "implied", code, uri, at, implied=True)
                                    for a in _implied_owner_checks(event, user))
        return log

    def accesses(self, user: str) -> list[Access]:
        return sorted({r.access for r in self.requests if r.access.user == user})


def audit_policy(users: Sequence[str], request_level_verbs: Sequence[str] = ("create",)) -> dict[str, Any]:
    """Metadata for every request of `users` (plus the request body of creates: ownerReferences),
    nothing for anyone else."""
    return {
        "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
        "rules": [
            {"level": "Request", "users": list(users), "verbs": list(request_level_verbs)},
            {"level": "Metadata", "users": list(users)},
            {"level": "None"},
        ],
    }
