"""`compute_plan` over in-memory snapshots (no API server): the two webhook modes, an unreachable
webhook, an MTU the daemon keeps, allocatable per resource and the users of a vanishing resource.

Host: none; the NodeState status stands for what a config daemon reported on a simulated host."""

from __future__ import annotations

import copy
import json
from typing import Any

from sriovop.api.v1 import consts
from sriovop.controllers.node_policy_desired import sync_outcome
from sriovop.host.decision import HOST_FACTS_ANNOTATION, HostFacts
from sriovop.plan.compute import compute_plan
from sriovop.plan.snapshot import Snapshot
from sriovop.plan.webhooks import PolicyWebhook, PolicyWebhooks
from test.support.json_keys import all_keys
from test.support.webhook_objects import NICS, OPERATOR_NS, intel_xxv710, policy

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "w1", "labels": {
    **consts.DEFAULT_CONFIG_DAEMON_NODE_SELECTOR, "kubernetes.io/hostname": "w1"}},
    "status": {"allocatable": {"openshift.io/intelnics": "4"}}}
CONFIG = {"metadata": {"name": "default", "namespace": OPERATOR_NS}, "spec": {}}
ENFORCED = PolicyWebhooks((PolicyWebhook("cfg", "v.sriov", "validating", "Fail", "https://x"),
                           PolicyWebhook("cfg", "m.sriov", "mutating", "Fail", "https://x")))
NONE = PolicyWebhooks(())


def _host(numvfs: int, mtu: int) -> dict[str, Any]:
    pf = intel_xxv710(numvfs=numvfs, mtu=mtu)
    pf["Vfs"] = [{"vfID": i, "pciAddress": f"0000:3b:02.{i}", "driver": "iavf", "mtu": mtu, "name": f"v{i}"}
                 for i in range(numvfs)]
    return pf


def snapshot(current: list[dict[str, Any]], host: dict[str, Any], webhooks: PolicyWebhooks | None,
             **extra: Any) -> Snapshot:
    """The cluster converged on `current`: the NodeState spec as the operator wrote it, the host as
    the daemon reported it, the facts it published (ens1f0 configured, IOMMU arguments set)."""
    state = {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodeState",
             "metadata": {"name": "w1", "namespace": OPERATOR_NS, "annotations": {
                 HOST_FACTS_ANNOTATION: HostFacts(configured={host["pciAddress"]: False},
                                                  cmdline=frozenset({"intel_iommu=on", "iommu=pt"})).to_json()}},
             "spec": {}, "status": {"interfaces": [host], "syncStatus": "Succeeded"}}
    outcome = sync_outcome(CONFIG, current, [NODE], {"w1": state}, [], NICS)
    state["spec"] = copy.deepcopy(outcome.nodes[0].spec)
    return Snapshot(namespace=OPERATOR_NS, config=CONFIG, policies=tuple(current), nodes=(NODE,),
                    states={"w1": state}, pools=(), nics=NICS, device_plugin=dict(outcome.device_plugin),
                    webhooks=webhooks, **extra)


def test_without_a_webhook_a_would_be_denial_is_a_warning_and_the_policy_is_planned() -> None:
    snap = snapshot([policy("p1", numVfs=4)], _host(4, 1500), NONE)
    # numVfs above the PF's totalvfs: the webhook's rule would deny it.
    plan = compute_plan(snap, [policy("p2", numVfs=128, nicSelector={"pfNames": ["ens1f1"]})])
    adm = plan["admission"]
    assert adm["mode"] == "none" and adm["allowed"] is True and adm["message"] == ""
    would = adm["policies"][0]["wouldDeny"]
    assert would["field"].startswith("spec.") and would["reason"]
    assert any("p2" in w and would["field"] in w for w in adm["warnings"])
    # Not a denial: the exit code follows disruption only, here none (ens1f1 is not on the host).
    assert plan["exitCode"] == 0


def test_with_an_enforcing_webhook_the_same_policy_is_denied() -> None:
    snap = snapshot([policy("p1", numVfs=4)], _host(4, 1500), ENFORCED)
    plan = compute_plan(snap, [policy("p2", numVfs=128, nicSelector={"pfNames": ["ens1f1"]})])
    assert plan["admission"]["mode"] == "enforced" and plan["admission"]["allowed"] is False
    assert "p2" in plan["admission"]["message"] and plan["exitCode"] == 1
    assert "wouldDeny" not in plan["admission"]["policies"][0]


def test_an_unreachable_webhook_is_reported_with_what_its_failure_policy_does() -> None:
    fail = PolicyWebhooks((PolicyWebhook("cfg", "v.sriov", "validating", "Fail", "service ns/svc:443",
                                         "Service ns/svc has no ready endpoint"),))
    plan = compute_plan(snapshot([], _host(0, 1500), fail), [policy("p1", numVfs=4)])
    assert plan["admission"]["mode"] == "refused" and plan["admission"]["allowed"] is False
    assert "no ready endpoint" in plan["admission"]["message"] and "failurePolicy Fail" in plan["admission"]["message"]
    assert plan["admission"]["webhooks"][0]["reachable"] is False
    assert plan["nodes"][0]["changed"] is False  # nothing is stored
    ignore = PolicyWebhooks((PolicyWebhook("cfg", "v.sriov", "validating", "Ignore", "https://x", "refused"),))
    plan = compute_plan(snapshot([], _host(0, 1500), ignore), [policy("p1", numVfs=128)])
    assert plan["admission"]["mode"] == "none" and plan["admission"]["allowed"] is True
    assert "failurePolicy Ignore" in plan["admission"]["webhooks"][0]["whenUnreachable"]


def test_a_lower_mtu_is_kept_by_the_daemon_and_said_so() -> None:
    snap = snapshot([policy("p1", numVfs=4, mtu=9000)], _host(4, 9000), ENFORCED)
    plan = compute_plan(snap, [policy("p1", numVfs=4, mtu=1500)])
    pf = next(p for p in plan["nodes"][0]["pfs"] if p["name"] == "ens1f0")
    assert pf["mtu"] == {"before": 9000, "after": 1500, "host": 9000, "result": 9000, "kept": True,
                         "reason": pf["mtu"]["reason"]}
    assert "only raises" in pf["mtu"]["reason"]
    assert any("mtu kept at 9000" in w for w in plan["nodes"][0]["warnings"])
    # The daemon still reconfigures the VFs (their group MTU changes): that, and only that, drains.
    assert pf["hostReasons"] == ["VF 0 mtu: 9000 -> 1500"]
    assert plan["nodes"][0]["disruption"] == "drain"


def test_a_higher_mtu_is_applied() -> None:
    snap = snapshot([policy("p1", numVfs=4, mtu=1500)], _host(4, 1500), ENFORCED)
    pf = next(p for p in compute_plan(snap, [policy("p1", numVfs=4, mtu=9000)])["nodes"][0]["pfs"]
              if p["name"] == "ens1f0")
    assert pf["mtu"]["result"] == 9000 and pf["mtu"]["kept"] is False and "mtu: 1500 -> 9000" in pf["hostReasons"]


def test_more_vfs_change_the_allocatable_of_the_resource() -> None:
    snap = snapshot([policy("p1", numVfs=4)], _host(4, 1500), ENFORCED)
    res = compute_plan(snap, [policy("p1", numVfs=8)])["nodes"][0]["resources"]
    assert res["changed"] == [{"resourceName": "intelnics", "allocatable": {"before": 4, "after": 8, "reported": 4},
                               "selectorsChanged": False}]
    assert res["added"] == [] and res["removed"] == []


def test_delete_names_the_networks_and_pods_that_use_the_vanishing_resource() -> None:
    net = {"metadata": {"name": "net1", "namespace": OPERATOR_NS}, "spec": {"resourceName": "intelnics"}}
    other = {"metadata": {"name": "net2", "namespace": "apps"}, "spec": {"resourceName": "else"}}
    pod = {"metadata": {"name": "app", "namespace": "apps"}, "spec": {"nodeName": "w1", "containers": [
        {"name": "c", "resources": {"limits": {"openshift.io/intelnics": "1"}}}]}, "status": {"phase": "Running"}}
    snap = snapshot([policy("p1", numVfs=4)], _host(4, 1500), ENFORCED, networks=(net, other), pods=(pod,))
    plan = compute_plan(snap, [policy("p1")], delete=True)
    removed = plan["nodes"][0]["resources"]["removed"]
    assert removed[0]["resourceName"] == "intelnics"
    assert removed[0]["networks"] == [f"{OPERATOR_NS}/net1"] and removed[0]["pods"] == ["apps/app"]
    assert any("net1" in w and "apps/app" in w for w in plan["nodes"][0]["warnings"])


def test_plan_json_uses_camel_case_and_upper_case_operations() -> None:
    snap = snapshot([policy("p1", numVfs=4)], _host(4, 1500), NONE)
    plan = compute_plan(snap, [policy("p1", numVfs=8), policy("p2", numVfs=2, nicSelector={"pfNames": ["ens1f1"]})])
    assert not {k for k in all_keys(json.loads(json.dumps(plan))) if "_" in k}
    assert [c["operation"] for c in plan["changes"]] == ["UPDATE", "CREATE"]
    assert [p["operation"] for p in plan["admission"]["policies"]] == ["UPDATE", "CREATE"]
