"""`sriovop plan` equals reality in both webhook modes, on the real API server with the operator's
node-policy, drain and policy-status controllers and two config daemons running.

Hosts: two simulated SR-IOV hosts (sriovop.sim), each an XXV710 (ens1f0, ens1f1) and an 82576
(ens2f0) with the IOMMU kernel arguments set. Admission: the real API server; in the webhook mode also
the real webhook server (in-process, over TLS) called by the API server through its Validating- and
MutatingWebhookConfiguration (test.support.plan_webhook).

Each step is planned, then written for real, policy by policy, and compared with the plan: whether the
API server stores or refuses each write (and what it stores), every NodeState spec the operator
writes, the drain/reboot each daemon asks for, and the PF MTU each host ends with. Without a webhook
(`enableOperatorWebhook: false`), the policies the webhook would deny are stored and applied: the plan
must say so (allowed, a warning naming the field) and plan the nodes with them.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from sriovop.api.v1.kinds import SRIOV_NETWORK, SRIOV_NETWORK_NODE_POLICY, SRIOV_NETWORK_NODE_STATE
from sriovop.controllers.node_policy_desired import normalized
from sriovop.plan.compute import compute_plan
from sriovop.plan.explain import explain
from sriovop.plan.snapshot import read_snapshot
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.runtime.kinds import POD, SERVICE_ACCOUNT
from sriovop.status import collect
from test.support.plan_cluster import IOMMU, Cluster, converged, create_or_replace, plan_cluster, pol, short
from test.support.plan_webhook import policy_webhook, unreachable_webhook
from test.support.poll import wait_for

RUN = uuid.uuid4().hex[:6]
GROUP = {"plan-modes": RUN}
HOSTS = {"m-a": (["xxv710", "82576:1"], IOMMU, {"rack": "r1"}),
         "m-b": (["xxv710", "82576:1"], IOMMU, {"rack": "r2"})}


def mp(name: str, **kw: Any) -> dict[str, Any]:
    """A policy for this module's nodes (pol's default nodeSelector is another module's)."""
    kw.setdefault("sel", GROUP)
    return pol(name, **kw)


@dataclass
class Step:
    name: str
    apply: list[dict[str, Any]] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    #: The policies the webhook would deny (without one) or denies (with one).
    denied: set[str] = field(default_factory=set)
    #: short node -> "none" | "drain"; "changed" | "daemonError" -> [short nodes]
    expect: dict[str, Any] = field(default_factory=dict)
    #: (short node, PF name) -> (MTU the host ends with, kept: the spec asks lower)
    mtu: dict[tuple[str, str], tuple[int, bool]] = field(default_factory=dict)


WITHOUT_WEBHOOK = [
    Step("accepted: 4 VFs on ens1f0, MTU 1500", [mp("p-a", pf=["ens1f0"], prio=50, mtu=1500)],
         expect={"changed": ["m-a", "m-b"]}, mtu={("m-a", "ens1f0"): (1500, False)}),
    Step("MTU raised to 9000", [mp("p-a", pf=["ens1f0"], prio=50, mtu=9000)], mtu={("m-a", "ens1f0"): (9000, False)}),
    Step("MTU lowered to 1500: the PF keeps 9000", [mp("p-a", pf=["ens1f0"], prio=50, mtu=1500)],
         mtu={("m-a", "ens1f0"): (9000, True), ("m-b", "ens1f0"): (9000, True)}),
    Step("numVfs 0 on a selected NIC", [mp("p-z", pf=["ens1f1"], vfs=0)], denied={"p-z"}, expect={"changed": []}),
    Step("a policy for another node", [mp("p-y", pf=["ens1f1"], sel={"rack": "r9"})], denied={"p-y"},
         expect={"changed": []}),
    # p-b overlaps the stored p-z (numVfs 0) on ens1f1 too.
    Step("equal priorities on one PF: the later name wins", [mp("p-b", pf=["ens1f1"], prio=40, res="rb"),
                                                             mp("p-c", pf=["ens1f1"], prio=40, res="rc")],
         denied={"p-b", "p-c"}, expect={"changed": ["m-a", "m-b"]}),
    Step("an empty nicSelector selects every PF", [mp("p-e", vfs=2, prio=90, res="re")], denied={"p-e"}),
    Step("vDPA on an Intel PF in legacy mode: stored, written, and refused by the daemon",
         [mp("p-v", pf=["ens1f1"], vfs=2, prio=10, res="rv", vdpaType="virtio")], denied={"p-v"},
         expect={"changed": ["m-a", "m-b"], "daemonError": ["m-a", "m-b"]}),
    Step("the vDPA policy deleted: the nodes recover", delete=["p-v"]),
    Step("a nicSelector matching no PF", [mp("p-x", pf=["ens9f9"])], denied={"p-x"}, expect={"changed": []}),
]
#: The last step without a webhook, run by test_delete_names_the_users_of_a_vanishing_resource.
CLEAN_UP = Step("clean up", delete=["p-a", "p-b", "p-c", "p-e", "p-x", "p-y", "p-z"])

WITH_WEBHOOK = [
    Step("accepted and defaulted: no priority given, the webhook sets 99", [mp("q-a", pf=["ens1f0"], vfs=4)],
         expect={"changed": ["m-a", "m-b"]}),
    Step("numVfs 0 on a selected NIC is denied", [mp("q-z", pf=["ens1f1"], vfs=0)], denied={"q-z"},
         expect={"changed": []}),
    Step("overlapping pfNames are denied", [mp("q-b", pf=["ens1f0"], prio=40, res="qb")], denied={"q-b"},
         expect={"changed": []}),
    Step("a policy for another node is denied", [mp("q-y", pf=["ens1f1"], sel={"rack": "r9"})], denied={"q-y"}),
    Step("MTU raised to 9000", [mp("q-a", pf=["ens1f0"], vfs=4, mtu=9000)], mtu={("m-a", "ens1f0"): (9000, False)}),
    Step("MTU lowered to 1500: the PF keeps 9000", [mp("q-a", pf=["ens1f0"], vfs=4, mtu=1500)],
         mtu={("m-a", "ens1f0"): (9000, True)}),
    Step("clean up", delete=["q-a"]),
]


@pytest.fixture(scope="module")
def modes_cluster(control_plane: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with plan_cluster(control_plane.kubeconfig, tmp_path_factory.mktemp("modes"), hosts=HOSTS, group=GROUP) as c:
        yield c


def _write(c: Cluster, policy: dict[str, Any], delete: bool) -> str:
    """The write as `kubectl apply`/`delete` makes it; the API server's refusal, or ""."""
    name = policy["metadata"]["name"]
    try:
        if delete:
            try:
                c.client.delete(SRIOV_NETWORK_NODE_POLICY, name, c.namespace)
            except NotFound:
                pass
        else:
            create_or_replace(c, {**policy, "metadata": {"name": name, "namespace": c.namespace}})
    except ApiError as exc:
        return str(exc)
    return ""


def run_step(c: Cluster, s: Step, enforced: bool) -> dict[str, Any]:
    snap = read_snapshot(c.client, c.namespace)
    given = s.apply or [mp(n) for n in s.delete]
    plan = compute_plan(snap, given, delete=bool(s.delete))
    adm = plan["admission"]
    by_short = {short(n["name"]): n for n in plan["nodes"]}
    assert set(by_short) == set(HOSTS)

    # Admission: the mode, the verdicts, the exit code.
    assert adm["mode"] == ("enforced" if enforced else "none"), adm
    for verdict in adm["policies"]:
        if verdict["policy"] in s.denied:
            if enforced:
                assert not verdict["allowed"] and verdict["policy"] in verdict["message"], verdict
            else:
                assert verdict["allowed"] and verdict["wouldDeny"]["field"].startswith("spec"), verdict
                assert any(verdict["policy"] in w and verdict["wouldDeny"]["field"] in w for w in adm["warnings"])
        else:
            assert verdict["allowed"] and "wouldDeny" not in verdict, verdict
    disruptive = any(n["disruption"] != "none" for n in plan["nodes"])
    assert plan["exitCode"] == (1 if not adm["allowed"] else 2 if disruptive else 0)
    for key, want in s.expect.items():
        if key == "changed":
            assert sorted(k for k, n in by_short.items() if n["changed"]) == sorted(want)
        elif key == "daemonError":
            assert sorted(k for k, n in by_short.items() if "vdpaType" in n.get("daemonError", "")) == want
        else:
            assert by_short[key]["disruption"] == want, by_short[key]

    # Reality: each write, then what the operator and the daemons do.
    c.log.reset([])
    for policy, verdict in zip(given, adm["policies"], strict=True):
        refused = _write(c, policy, bool(s.delete))
        assert (refused == "") == verdict["allowed"], (verdict, refused)
        if refused:
            assert verdict["policy"] in refused
        elif "storedSpec" in verdict:
            stored = c.client.get(SRIOV_NETWORK_NODE_POLICY, verdict["policy"], c.namespace)["spec"]
            assert normalized(stored) == normalized(verdict["storedSpec"]), (stored, verdict["storedSpec"])
    for node in plan["nodes"]:
        name = node["name"]
        if node.get("daemonError"):  # the operator writes the spec, the daemon refuses it as planned
            refusal = node["daemonError"].split(": ", 1)[1]
            wait_for(lambda n=name, pn=node, r=refusal: _refused_by_daemon(c, n, pn, r), 120,
                     f"{name} to refuse the planned spec")
            continue
        wait_for(lambda n=name, pn=node: converged(c, n, pn), 120, f"{name} to converge on the planned spec")
        state = c.client.get(SRIOV_NETWORK_NODE_STATE, name, c.namespace)
        assert (state.get("spec") or {}).get("interfaces", []) == node["spec"]["interfaces"], name
        assert c.log.level(name) == node["disruption"], (name, c.log.seen.get(name), node)
        host = {i["name"]: i for i in (state.get("status") or {}).get("interfaces") or []}
        for pf in node["pfs"]:
            if pf["name"] in host and pf["action"] != "reset":
                assert host[pf["name"]]["mtu"] == pf["mtu"]["result"], (name, pf)
    for (node_short, pf_name), (mtu, kept) in s.mtu.items():
        pf = next(p for p in by_short[node_short]["pfs"] if p["name"] == pf_name)
        assert (pf["mtu"]["result"], pf["mtu"]["kept"]) == (mtu, kept), pf
        if kept:  # and it stays visible after the apply, in status and explain, naming the field
            node_name = by_short[node_short]["name"]
            status = next(n for n in collect(c.client, c.namespace).nodes if n.node == node_name)
            assert any(f"pf {pf_name}: mtu is {mtu}" in w for w in status.warnings), status.warnings
            report = explain(read_snapshot(c.client, c.namespace), node=node_name)
            assert any(f"pf {pf_name}: mtu is {mtu}" in w for w in report["nodes"][0]["warnings"])
            again = compute_plan(read_snapshot(c.client, c.namespace), given)
            assert not any(n["changed"] for n in again["nodes"]), "reapplying the same policy plans nothing"
    return plan


def _refused_by_daemon(c: Cluster, node: str, plan_node: dict[str, Any], refusal: str) -> bool:
    state = c.client.get(SRIOV_NETWORK_NODE_STATE, node, c.namespace)
    status = state.get("status") or {}
    return ((state.get("spec") or {}).get("interfaces", []) == plan_node["spec"]["interfaces"]
            and status.get("syncStatus") == "Failed" and refusal in (status.get("lastSyncError") or ""))


@pytest.mark.parametrize("index", range(len(WITHOUT_WEBHOOK)), ids=[s.name for s in WITHOUT_WEBHOOK])
def test_without_a_policy_webhook_plan_equals_reality(modes_cluster: Cluster, index: int) -> None:
    run_step(modes_cluster, WITHOUT_WEBHOOK[index], enforced=False)


def test_delete_names_the_users_of_a_vanishing_resource(modes_cluster: Cluster) -> None:
    """A SriovNetwork using p-a's resource, and a pod bound to m-a requesting it: deleting every policy
    names both. No kubelet runs the pod (it could never leave a drain), so it is removed before the
    deletion is applied and compared with its plan."""
    c = modes_cluster
    with contextlib.suppress(ApiError):
        c.client.create(SERVICE_ACCOUNT, {"metadata": {"name": "default", "namespace": c.namespace}}, c.namespace)
    c.client.create(SRIOV_NETWORK, {"metadata": {"name": "net-a", "namespace": c.namespace},
                                    "spec": {"resourceName": "pa", "networkNamespace": c.namespace}}, c.namespace)
    node_a = next(n for n in c.sims if short(n) == "m-a")
    c.client.create(POD, {"metadata": {"name": "uses-pa", "namespace": c.namespace}, "spec": {
        "nodeName": node_a, "containers": [{"name": "c", "image": "busybox", "resources": {
            "requests": {"openshift.io/pa": "1"}, "limits": {"openshift.io/pa": "1"}}}]}}, c.namespace)
    try:
        plan = compute_plan(read_snapshot(c.client, c.namespace), [mp(n) for n in CLEAN_UP.delete], delete=True)
    finally:
        c.client.delete(POD, "uses-pa", c.namespace, grace_period_seconds=0)
        c.client.delete(SRIOV_NETWORK, "net-a", c.namespace)
    rows = {short(n["name"]): {r["resourceName"]: r for r in n["resources"]["removed"]} for n in plan["nodes"]}
    assert rows["m-a"]["pa"]["networks"] == [f"{c.namespace}/net-a"]
    assert rows["m-a"]["pa"]["pods"] == [f"{c.namespace}/uses-pa"]
    assert rows["m-b"]["pa"]["pods"] == []  # the pod is on m-a only
    assert rows["m-a"]["pa"]["allocatable"]["after"] == 0 < rows["m-a"]["pa"]["allocatable"]["before"]
    text = " ".join(next(n for n in plan["nodes"] if short(n["name"]) == "m-a")["warnings"])
    assert "openshift.io/pa vanishes" in text and "uses-pa" in text and "net-a" in text
    wait_for(lambda: not any(p["metadata"]["name"] == "uses-pa" for p in c.client.list(POD, c.namespace)), 60,
             "the pod to be gone")
    run_step(c, CLEAN_UP, enforced=False)


def test_with_the_policy_webhook_plan_equals_reality(modes_cluster: Cluster, control_plane: Any) -> None:
    with policy_webhook(control_plane, modes_cluster, GROUP):
        for step in WITH_WEBHOOK:
            run_step(modes_cluster, step, enforced=True)


def test_an_unreachable_webhook_is_reported_with_its_failure_policy(modes_cluster: Cluster,
                                                                    control_plane: Any) -> None:
    c = modes_cluster
    given = [mp("u-a", pf=["ens1f0"], vfs=2)]
    with unreachable_webhook(control_plane, c, "Fail"):
        plan = compute_plan(read_snapshot(c.client, c.namespace), given)
        hook = plan["admission"]["webhooks"][0]
        assert plan["admission"]["mode"] == "refused" and plan["exitCode"] == 1
        assert hook["reachable"] is False and "does not accept connections" in hook["problem"]
        assert "failurePolicy Fail" in plan["admission"]["message"]
        # Reality: once the API server has loaded the configuration, it refuses the write.
        refused = wait_for(lambda: _write(c, given[0], False), 60, "the API server to call the webhook")
        assert "failed calling webhook" in refused
    with unreachable_webhook(control_plane, c, "Ignore"):
        plan = compute_plan(read_snapshot(c.client, c.namespace), given)
        assert plan["admission"]["mode"] == "none" and plan["admission"]["allowed"] is True
        assert "failurePolicy Ignore" in plan["admission"]["webhooks"][0]["whenUnreachable"]
    assert _write(c, given[0], True) == ""  # nothing of this test stays


