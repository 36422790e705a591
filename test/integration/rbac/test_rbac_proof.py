"""RBAC proof: the whole flow runs with exactly the manifests' roles, and every rule is needed.

One private control plane (RBAC, an audit log of the components' requests, and the
OwnerReferencesPermissionEnforcement admission plugin that OpenShift enables) runs the least-privilege
demo - webhook, two operator replicas, two simulated nodes with config daemons, each component with a
real ServiceAccount token bound to manifests/rbac/ - and then the paths the demo does not reach:
a drain that evicts a pod admitted by the injector, networks of every kind with NADs updated and deleted,
a device-plugin pod whose init container (`sriovop wait-for-config`, as the device plugin's account)
waits through an apply, a hardware-offload pool config, a stale NodeState, two pools claiming one node
(repeated warnings),
both webhooks deployed and repaired, and the operator's shutdown cleanup. From the audit log:
- no request of a component was denied, and the components' users are the ServiceAccounts';
- every (apiGroup, resource, verb) a rule grants was used by a recorded request;
- for each rule, removing it denies some recorded request (named with the flow step that made it),
  checked by RBAC rule evaluation and confirmed by the API server's SubjectAccessReviews.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from sriovop.api.v1.kinds import SRIOV_OPERATOR_CONFIG
from sriovop.demo.identities import (
    COMPONENTS,
    Component,
    mint_identities,
    service_account_groups,
    service_account_user,
)
from sriovop.demo.runner import NS, Demo, manifests_dir
from sriovop.devcluster import ControlPlane
from sriovop.devcluster.audit import audit_args
from sriovop.devcluster.controlplane import ADMIN_USER
from sriovop.render.workloads import DEVICE_PLUGIN_SERVICE_ACCOUNT
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import Forbidden, NotFound
from sriovop.runtime.kinds import CLUSTER_ROLE, CLUSTER_ROLE_BINDING, CONFIG_MAP, NAMESPACE, ROLE, ROLE_BINDING
from test.support import rbac_flow
from test.support.poll import wait_for
from test.support.rbac_audit import (
    Access,
    AuditLog,
    Grant,
    allowed_by,
    atoms,
    audit_policy,
    grants_for,
    load_rbac,
)

RBAC_FILES = sorted((manifests_dir() / "rbac").glob("*.yaml"))
GROUPS = service_account_groups(NS)
#: The device-plugin pods' init container (`sriovop wait-for-config`); the demo runs no device plugin,
#: the flow's device-plugin step does.
DEVICE_PLUGIN = Component("device-plugin", DEVICE_PLUGIN_SERVICE_ACCOUNT)
PROVEN: tuple[Component, ...] = (*COMPONENTS, DEVICE_PLUGIN)


@dataclass
class Proof:
    log: AuditLog
    timeline: rbac_flow.Timeline
    docs: list[dict[str, Any]]
    admin: Client
    converged: bool
    cp: ControlPlane


def _user(component: Component) -> str:
    return service_account_user(NS, component.service_account)


def _wait_audit_caught_up(admin: Client, audit: Path) -> None:
    """Wait until the log holds a request made after every component stopped: the requests they made
    before are then written (the log backend writes each event in its request's handler)."""
    marker = f"audit-caught-up-{uuid.uuid4().hex[:8]}"
    try:
        admin.get(NAMESPACE, marker)
    except NotFound:
        pass
    wait_for(lambda: marker in audit.read_text(), timeout=60, what=f"the request for namespace {marker} in {audit}")


@pytest.fixture(scope="module")
def proof(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proof]:
    base = tmp_path_factory.mktemp("rbac-proof")
    policy, audit = base / "audit-policy.yaml", base / "audit.log"
    # The admin's requests are recorded too (and not read): its last one marks the log as caught up.
    policy.write_text(yaml.safe_dump(audit_policy([_user(c) for c in PROVEN] + [ADMIN_USER])))
    timeline = rbac_flow.Timeline()
    demo = Demo(base / "demo", timeline.say, least_privilege=True, timeout=150.0,
                apiserver_args=[*audit_args(base, policy),
                                "--enable-admission-plugins=OwnerReferencesPermissionEnforcement"],
                operator_env={"STALE_NODE_STATE_CLEANUP_DELAY_MINUTES": "0"})
    try:
        result = demo.run(threading.Event())
        assert demo.cp is not None and demo.client is not None
        admin = demo.client
        nodes = [n.name for n in demo.nodes]
        if result.converged:
            rbac_flow.drain_with_a_workload(admin, timeline, demo.webhook_url, demo.cp.ca_pem, nodes)
            device_plugin = mint_identities(admin, demo.cp, NS, (DEVICE_PLUGIN,))[DEVICE_PLUGIN.name]
            rbac_flow.device_plugin_blocked_until_configured(admin, timeline, device_plugin, base / "device-plugin",
                                                             nodes)
            rbac_flow.networks_lifecycle(admin, timeline)
            rbac_flow.pool_config_lifecycle(admin, timeline)
            rbac_flow.stale_node_state(admin, timeline)
            rbac_flow.conflicting_pools(admin, timeline, nodes[0])
            rbac_flow.webhooks_enabled_and_repaired(admin, timeline)
        timeline.mark("stop every component (the leading operator's shutdown cleanup)")
        demo.procs.check_alive()
        demo.procs.stop_all()
        _wait_audit_caught_up(admin, audit)
        yield Proof(AuditLog.read(audit, [_user(c) for c in PROVEN]), timeline,
                    load_rbac(RBAC_FILES), admin, result.converged, demo.cp)
    finally:
        demo.stop()


def _component_grants(proof: Proof, component: Component) -> list[Grant]:
    return grants_for(proof.docs, _user(component), GROUPS)


def test_the_flow_converges_with_the_manifests_roles(proof: Proof) -> None:
    assert proof.converged, "the least-privilege demo did not converge"
    for component in PROVEN:
        mine = [r for r in proof.log.requests if r.access.user == _user(component)]
        assert mine, f"no request from {component.name} as {_user(component)} in the audit log"


def test_no_request_was_denied(proof: Proof) -> None:
    denied = [f"{r.access.describe()} by {r.access.user} during '{proof.timeline.step_at(r.at)}' -> HTTP {r.code}"
              for r in proof.log.requests if not r.implied and r.decision != "allow"]
    assert denied == []
    assert [r for r in proof.log.requests if r.code == 403] == []
    assert proof.log.non_resource == [], "components made non-resource requests the roles do not cover"


def test_every_request_is_allowed_by_the_rules_evaluated_here(proof: Proof) -> None:
    for component in PROVEN:
        grants = _component_grants(proof, component)
        unexplained = [a.describe() for a in proof.log.accesses(_user(component)) if allowed_by(grants, a) is None]
        assert unexplained == [], f"{component.name}: recorded but not granted by manifests/rbac: {unexplained}"


def test_every_granted_permission_is_used(proof: Proof) -> None:
    unused = []
    for component in PROVEN:
        accesses = proof.log.accesses(_user(component))
        for grant in _component_grants(proof, component):
            for group, resource, verb in atoms(grant):
                if not any(grant.allows(a) and (a.group, a.full_resource, a.verb) == (group, resource, verb)
                           for a in accesses):
                    unused.append(f"{component.name}: {verb} {resource}.{group or 'core'} ({grant.describe()})")
    assert unused == [], "granted but never used in the flow (cover the code path, or drop it):\n" + "\n".join(unused)


def _witnesses(proof: Proof, component: Component, grant: Grant) -> list[Access]:
    """Recorded requests that the component's rules allow only with `grant` among them."""
    others = [g for g in _component_grants(proof, component) if g.rule_id != grant.rule_id]
    return [a for a in proof.log.accesses(_user(component)) if allowed_by(others, a) is None]


def _first_at(proof: Proof, access: Access) -> str:
    when = min(r.at for r in proof.log.requests if r.access == access)
    return proof.timeline.step_at(when)


def test_removing_any_rule_denies_a_named_step(proof: Proof) -> None:
    table = []
    problems = []
    for component in PROVEN:
        for grant in _component_grants(proof, component):
            witnesses = _witnesses(proof, component, grant)
            if not witnesses:
                problems.append(f"{component.name}: {grant.describe()} can be removed: no recorded request needs it")
                continue
            first = witnesses[0]
            table.append(f"{component.name}: without {grant.describe()}: {first.describe()} is denied "
                         f"(step '{_first_at(proof, first)}')")
    print("\n".join(table))
    assert problems == [], "\n".join(problems)


def _sar(admin: Client, access: Access, user: str, groups: list[str]) -> bool:
    attrs = {"verb": access.verb, "group": access.group, "resource": access.resource}
    for key, value in (("subresource", access.subresource), ("namespace", access.namespace),
                       ("name", access.name)):
        if value:
            attrs[key] = value
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": groups, "resourceAttributes": attrs}}
    answer = json.loads(admin.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=body).data)
    return bool(answer["status"].get("allowed"))


def test_the_api_server_agrees_every_recorded_request_is_allowed(proof: Proof) -> None:
    disagree = []
    for component in PROVEN:
        for access in proof.log.accesses(_user(component)):
            if not _sar(proof.admin, access, access.user, GROUPS):
                disagree.append(f"{component.name}: {access.describe()}")
    assert disagree == []


def _without(docs: list[dict[str, Any]], grant: Grant, user: str, tag: str) -> list[dict[str, Any]]:
    """The roles and bindings that give `user` what the component's ServiceAccount has, minus `grant`."""
    out: list[dict[str, Any]] = []
    for doc in docs:
        if doc["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ref = doc["roleRef"]
        bns = doc["metadata"].get("namespace") or ""
        label = f"ClusterRole/{ref['name']}" if ref["kind"] == "ClusterRole" else f"Role/{bns}/{ref['name']}"
        role = next(d for d in docs if d["kind"] == ref["kind"] and d["metadata"]["name"] == ref["name"]
                    and (d["metadata"].get("namespace") or "") == (bns if ref["kind"] == "Role" else ""))
        rules = [r for i, r in enumerate(role.get("rules") or []) if (label, i) != grant.rule_id]
        name = f"{tag}-{ref['name']}"
        meta = {"name": name, **({"namespace": bns} if ref["kind"] == "Role" else {})}
        out.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": ref["kind"], "metadata": meta,
                    "rules": rules})
        bmeta = {"name": name, **({"namespace": bns} if doc["kind"] == "RoleBinding" else {})}
        out.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": doc["kind"], "metadata": bmeta,
                    "roleRef": {**ref, "name": name},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    return out


def _allows(admin: Client, access: Access, user: str) -> Callable[[], bool]:
    return lambda: _sar(admin, access, user, [])


_KIND_OF = {"Role": ROLE, "ClusterRole": CLUSTER_ROLE, "RoleBinding": ROLE_BINDING,
            "ClusterRoleBinding": CLUSTER_ROLE_BINDING}


def test_the_api_server_denies_each_witness_without_its_rule(proof: Proof) -> None:
    """Per rule: a user bound to the component's roles minus that rule is allowed some other recorded
    request of the component (the bindings are in effect) and denied the witness."""
    admin = proof.admin
    failures = []
    k = 0
    for component in PROVEN:
        grants = _component_grants(proof, component)
        mine = [d for d in proof.docs if any(s.get("name") == component.service_account
                                              for s in d.get("subjects") or [])]
        for grant in grants:
            witnesses = _witnesses(proof, component, grant)
            if not witnesses:
                continue  # reported by test_removing_any_rule_denies_a_named_step
            k += 1
            user, tag = f"rbac-proof-minus-{k}", f"rbac-proof-{k}"
            role_docs = [d for d in proof.docs if d["kind"] in ("Role", "ClusterRole")]
            for doc in _without(mine + role_docs, grant, user, tag):
                admin.create(_KIND_OF[doc["kind"]], doc, doc["metadata"].get("namespace"))
            others = [g for g in grants if g.rule_id != grant.rule_id]
            control = next((a for a in proof.log.accesses(_user(component)) if allowed_by(others, a)), None)
            assert control is not None
            wait_for(_allows(admin, control, user), 30, f"the reduced roles of {user} take effect")
            if _sar(admin, witnesses[0], user, []):
                failures.append(f"{component.name}: without {grant.describe()} the API server still allows "
                                f"{witnesses[0].describe()}")
    assert failures == []


def test_owner_references_need_the_finalizers_permission_here(proof: Proof) -> None:
    """The implied checks are real in this control plane: OwnerReferencesPermissionEnforcement refuses
    a blockOwnerDeletion reference to `default` from a user who may create ConfigMaps but not update
    sriovoperatorconfigs/finalizers."""
    admin, user = proof.admin, "rbac-proof-configmaps-only"
    admin.create(ROLE, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                        "metadata": {"name": user, "namespace": NS},
                        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]}, NS)
    admin.create(ROLE_BINDING, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                                "metadata": {"name": user, "namespace": NS},
                                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
                                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                              "name": user}]}, NS)
    config = admin.get(SRIOV_OPERATOR_CONFIG, "default", NS)
    owner = {"apiVersion": config["apiVersion"], "kind": config["kind"], "name": "default",
             "uid": config["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    restricted = Client(load_config(str(proof.cp.mint_user(user))))
    try:
        def plain_create_allowed() -> bool:  # the role is in effect (the authorizer follows by a watch)
            plain = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "rbac-proof-plain-"}}
            try:
                restricted.create(CONFIG_MAP, plain, NS)
                return True
            except Forbidden:
                return False

        wait_for(plain_create_allowed, 30, f"{user} may create ConfigMaps")
        owned = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "rbac-proof-owned", "namespace": NS, "ownerReferences": [owner]}}
        with pytest.raises(Forbidden, match="blockOwnerDeletion"):
            restricted.create(CONFIG_MAP, owned, NS)
    finally:
        restricted.close()


def test_a_client_certificate_with_a_service_account_name_is_bound_like_the_account(proof: Proof) -> None:
    """RBAC matches a ServiceAccount subject by user name, so a client certificate whose common name is
    `system:serviceaccount:<ns>:<name>` gets the account's roles (checked with the webhook's account,
    whose name fits); the other accounts' names exceed X.509's 64-character common name, which is why
    the demo uses ServiceAccount tokens."""
    webhook_user = service_account_user(NS, "operator-webhook-sa")
    assert len(webhook_user) <= 64
    client = Client(load_config(str(proof.cp.mint_user(webhook_user, GROUPS))))
    try:
        assert client.get(CONFIG_MAP, "supported-nic-ids", NS)["metadata"]["name"] == "supported-nic-ids"
        with pytest.raises(Forbidden):
            client.get(CONFIG_MAP, "device-plugin-config", NS)  # not in the role's resourceNames
    finally:
        client.close()
    for component in COMPONENTS:
        if len(_user(component)) > 64:
            with pytest.raises(ValueError, match="64"):
                proof.cp.mint_user(_user(component), GROUPS)
