"""The RBAC proof's own evaluator (test/support/rbac_audit.py): RBAC matching and audit-log reading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test.support.rbac_audit import Access, AuditLog, allowed_by, atoms, grants_for

SA = "system:serviceaccount:ops:op"
GROUPS = ["system:serviceaccounts", "system:serviceaccounts:ops"]


def _rbac() -> list[dict[str, Any]]:
    sa = [{"kind": "ServiceAccount", "name": "op", "namespace": "ops"}]
    return [
        {"kind": "ClusterRole", "metadata": {"name": "c"}, "rules": [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]},
            {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
        ]},
        {"kind": "ClusterRoleBinding", "metadata": {"name": "c"}, "subjects": sa,
         "roleRef": {"kind": "ClusterRole", "name": "c"}},
        {"kind": "Role", "metadata": {"name": "r", "namespace": "ops"}, "rules": [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["lock"],
             "verbs": ["get", "update"]},
        ]},
        {"kind": "RoleBinding", "metadata": {"name": "r", "namespace": "ops"}, "subjects": sa,
         "roleRef": {"kind": "Role", "name": "r"}},
        {"kind": "ClusterRole", "metadata": {"name": "reader"}, "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]},
        {"kind": "RoleBinding", "metadata": {"name": "reader", "namespace": "ops"},
         "subjects": [{"kind": "Group", "name": "system:serviceaccounts:ops"}],
         "roleRef": {"kind": "ClusterRole", "name": "reader"}},
        {"kind": "ClusterRoleBinding", "metadata": {"name": "other"},
         "subjects": [{"kind": "ServiceAccount", "name": "other", "namespace": "ops"}],
         "roleRef": {"kind": "ClusterRole", "name": "reader"}},
    ]


def test_service_account_subjects_match_by_user_name_and_groups_by_membership() -> None:
    grants = grants_for(_rbac(), SA, GROUPS)
    assert sorted({g.role for g in grants}) == ["ClusterRole/c", "ClusterRole/reader", "Role/ops/r"]
    assert grants_for(_rbac(), "system:serviceaccount:ops:nobody", []) == []


def test_scopes_verbs_subresources_and_resource_names() -> None:
    grants = grants_for(_rbac(), SA, GROUPS)
    ok = [Access(SA, "patch", "", "nodes", name="n1"),
          Access(SA, "create", "", "pods", "eviction", "apps", "p"),
          Access(SA, "get", "coordination.k8s.io", "leases", namespace="ops", name="lock"),
          Access(SA, "list", "", "configmaps", namespace="ops")]
    denied = [Access(SA, "list", "", "nodes"),                       # verb
              Access(SA, "create", "", "pods", namespace="apps"),    # subresource is a different resource
              Access(SA, "get", "coordination.k8s.io", "leases", namespace="ops", name="other"),  # name
              Access(SA, "get", "coordination.k8s.io", "leases", namespace="kube-system", name="lock"),  # ns
              Access(SA, "list", "", "configmaps", namespace="default"),  # RoleBinding scopes a ClusterRole
              Access(SA, "get", "apps", "nodes", name="n1")]         # group
    assert [a.describe() for a in ok if allowed_by(grants, a) is None] == []
    assert [a.describe() for a in denied if allowed_by(grants, a) is not None] == []


def test_atoms_are_the_cross_product_of_a_rule() -> None:
    (grant,) = [g for g in grants_for(_rbac(), SA, GROUPS) if g.role == "ClusterRole/c" and g.index == 0]
    assert atoms(grant) == [("", "nodes", "get"), ("", "nodes", "patch")]


def _event(audit_id: str, stage: str, user: str, verb: str, ref: dict[str, str] | None, decision: str,
           code: int, obj: dict[str, Any] | None = None) -> str:
    event: dict[str, Any] = {
        "auditID": audit_id, "stage": stage, "user": {"username": user}, "verb": verb,
        "requestURI": "/x", "requestReceivedTimestamp": "2026-01-01T00:00:00.000000Z",
        "annotations": {"authorization.k8s.io/decision": decision}, "responseStatus": {"code": code}}
    if ref is not None:
        event["objectRef"] = ref
    if obj is not None:
        event["requestObject"] = obj
    return json.dumps(event)


def test_audit_log_dedupes_stages_keeps_decisions_and_derives_owner_checks(tmp_path: Path) -> None:
    owner = {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovOperatorConfig", "name": "default",
             "uid": "u", "blockOwnerDeletion": True}
    lines = [
        _event("1", "ResponseStarted", SA, "watch", {"resource": "nodes", "apiVersion": "v1"}, "allow", 200),
        _event("1", "ResponseComplete", SA, "watch", {"resource": "nodes", "apiVersion": "v1"}, "allow", 200),
        _event("2", "ResponseComplete", SA, "create",
               {"resource": "daemonsets", "apiGroup": "apps", "namespace": "ops", "name": "d"}, "allow", 201,
               {"metadata": {"name": "d", "ownerReferences": [owner]}}),
        _event("3", "ResponseComplete", SA, "delete", {"resource": "secrets", "namespace": "ops", "name": "s"},
               "forbid", 403),
        _event("4", "ResponseComplete", "someone-else", "get", {"resource": "nodes"}, "allow", 200),
        _event("5", "ResponseComplete", SA, "get", None, "allow", 200),
    ]
    path = tmp_path / "audit.log"
    path.write_text("\n".join(lines) + "\n")
    log = AuditLog.read(path, [SA])
    summary = [(r.access.describe(), r.decision, r.code, r.implied) for r in log.requests]
    assert summary == [
        ("watch nodes.core (cluster-wide)", "allow", 200, False),
        ("create daemonsets.apps 'd' in ops", "allow", 201, False),
        ("update sriovoperatorconfigs/finalizers.sriovnetwork.openshift.io 'default' in ops", "implied", 201, True),
        ("delete secrets.core 's' in ops", "forbid", 403, False),
    ]
    assert log.non_resource == [(SA, "get", "/x")]
