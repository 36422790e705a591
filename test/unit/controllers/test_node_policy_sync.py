"""One policy sync over an in-memory fake API: stale NodeStates on a controlled clock, bad policies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY, SRIOV_NETWORK_NODE_STATE, SRIOV_OPERATOR_CONFIG
from sriovop.controllers.node_policy import REASON_POLICY_NOT_APPLIED, NodePolicyReconciler
from sriovop.runtime.controller import Request
from sriovop.runtime.kinds import CONFIG_MAP, NODE
from test.support.controllers_fake_api import FakeApi, FakeRecorder

NS = "op"
IFACES = [{"name": "ens1f0", "pciAddress": "0000:3b:00.0", "vendor": "8086", "deviceID": "158b"}]


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def setup_api(*nodes: str) -> FakeApi:
    api = FakeApi()
    api.add(SRIOV_OPERATOR_CONFIG, {"metadata": {"name": "default", "namespace": NS}, "spec": {}})
    for name in nodes:
        api.add(NODE, {"metadata": {"name": name, "labels": {"node-role.kubernetes.io/worker": "",
                                                             "kubernetes.io/os": "linux"}}})
    return api


def reconciler(api: FakeApi, **kw: Any) -> NodePolicyReconciler:
    return NodePolicyReconciler(api, api, NS, **kw)


def sync(r: NodePolicyReconciler) -> Any:
    return r.reconcile(Request(NS, "node-policy-sync-event"))


def test_without_operator_config_requeues_after_5s() -> None:
    api = FakeApi()
    result = sync(reconciler(api))
    assert result is not None and result.requeue_after == 5.0
    assert api.writes == []


def test_stale_node_state_kept_until_keep_until_then_deleted() -> None:
    api = setup_api("w0", "w1")
    clock = Clock()
    r = reconciler(api, stale_delay_minutes=30, clock=clock)
    sync(r)
    assert {o["metadata"]["name"] for o in api.list(SRIOV_NETWORK_NODE_STATE, NS)} == {"w0", "w1"}
    assert api.get(NODE, "w1")["metadata"]["labels"][consts.DEVICE_PLUGIN_LABEL] == "Disabled"
    api.delete(NODE, "w1")
    api.add(NODE, {"metadata": {"name": "w1", "labels": {consts.DEVICE_PLUGIN_LABEL: "Disabled"}}})  # unselected
    result = sync(r)
    state = api.get(SRIOV_NETWORK_NODE_STATE, "w1", NS)
    assert state["metadata"]["annotations"][consts.NODE_STATE_KEEP_UNTIL_ANNOTATION] == "2026-01-01T12:30:00Z"
    assert result.requeue_after == 300.0  # the 5-minute resync comes before the 30-minute keep-until
    assert consts.DEVICE_PLUGIN_LABEL not in api.get(NODE, "w1")["metadata"]["labels"]
    clock.now += timedelta(minutes=29)
    result = sync(r)
    assert api.get(SRIOV_NETWORK_NODE_STATE, "w1", NS)  # still kept
    assert result.requeue_after == 60.0
    clock.now += timedelta(minutes=1)
    sync(r)
    assert [o["metadata"]["name"] for o in api.list(SRIOV_NETWORK_NODE_STATE, NS)] == ["w0"]


def test_zero_delay_deletes_at_once() -> None:
    api = setup_api("w0")
    api.add(SRIOV_NETWORK_NODE_STATE, {"metadata": {"name": "gone", "namespace": NS}, "spec": {}})
    sync(reconciler(api, stale_delay_minutes=0))
    assert [o["metadata"]["name"] for o in api.list(SRIOV_NETWORK_NODE_STATE, NS)] == ["w0"]


def test_unapplicable_policy_gets_a_warning_event_and_other_nodes_still_sync() -> None:
    api = setup_api("w0")
    rec = FakeRecorder()
    r = reconciler(api, recorder=rec)
    sync(r)  # creates the NodeState
    state = api.get(SRIOV_NETWORK_NODE_STATE, "w0", NS)
    state["status"] = {"interfaces": IFACES}
    api.objects[("SriovNetworkNodeState", NS, "w0")] = state
    for name, pf in (("good", "ens1f0"), ("bad", "ens1f0#x-1")):
        api.add(SRIOV_NETWORK_NODE_POLICY, {"metadata": {"name": name, "namespace": NS}, "spec": {
            "resourceName": name, "numVfs": 4, "priority": 10 if name == "bad" else 20,
            "nodeSelector": {"kubernetes.io/os": "linux"}, "nicSelector": {"pfNames": [pf]}}})
    with pytest.raises(RuntimeError, match="policy sync incomplete: NodeState w0: SriovNetworkNodePolicy bad"):
        sync(r)
    assert [(n, t, reason) for n, t, reason, _ in rec.events] == [("bad", "Warning", REASON_POLICY_NOT_APPLIED)]
    # the device plugin config was still written for the node
    assert "w0" in api.get(CONFIG_MAP, consts.DEVICE_PLUGIN_CONFIGMAP, NS)["data"]


def test_unchanged_sync_writes_nothing() -> None:
    api = setup_api("w0", "w1")
    r = reconciler(api)
    sync(r)
    api.writes.clear()
    sync(r)
    assert api.writes == []
