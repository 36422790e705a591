"""The sync of one node (`nodestate/<node>`, on a change of its reported interfaces): it writes what
the full sync writes for that node - NodeState spec, ConfigMap entry, label - and nothing of any
other node; a node that is gone or not selected gets the full sync instead. In-memory fake API."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY, SRIOV_NETWORK_NODE_STATE
from sriovop.controllers.node_policy import (
    NODE_KEY_PREFIX,
    REASON_POLICY_NOT_APPLIED,
    SYNC_KEY_NAME,
    NodePolicyReconciler,
)
from sriovop.runtime.controller import Request
from sriovop.runtime.kinds import CONFIG_MAP, NODE
from test.support.controllers_fake_api import FakeApi, FakeRecorder
from test.unit.controllers.test_node_policy_sync import IFACES, NS, reconciler, setup_api, sync


class FakeController:
    def __init__(self) -> None:
        self.enqueued: list[Request] = []

    def enqueue(self, req: Request) -> None:
        self.enqueued.append(req)


def _report(api: FakeApi, name: str, interfaces: list[dict[str, Any]]) -> None:
    """The daemon's status write: the NodeState's reported interfaces."""
    state = api.get(SRIOV_NETWORK_NODE_STATE, name, NS)
    state["status"] = {"interfaces": interfaces}
    api.objects[("SriovNetworkNodeState", NS, name)] = state


def _policy(num_vfs: int) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": NS}, "spec": {
        "resourceName": "r", "numVfs": num_vfs, "priority": 10, "nodeSelector": {"kubernetes.io/os": "linux"},
        "nicSelector": {"pfNames": ["ens1f0"]}}}


def _node_view(api: FakeApi, name: str) -> tuple[Any, Any, Any]:
    state = api.get(SRIOV_NETWORK_NODE_STATE, name, NS)
    data = api.get(CONFIG_MAP, consts.DEVICE_PLUGIN_CONFIGMAP, NS).get("data") or {}
    return state.get("spec"), data.get(name), api.get(NODE, name)["metadata"]["labels"].get(consts.DEVICE_PLUGIN_LABEL)


def sync_node(r: NodePolicyReconciler, name: str) -> Any:
    return r.reconcile(Request(NS, NODE_KEY_PREFIX + name))


def test_one_node_sync_writes_what_the_full_sync_writes_for_that_node_and_nothing_else() -> None:
    api = setup_api("w0", "w1")
    sync(reconciler(api))  # creates both NodeStates (empty specs), the ConfigMap and the labels
    api.add(SRIOV_NETWORK_NODE_POLICY, _policy(4))
    _report(api, "w0", IFACES)
    _report(api, "w1", IFACES)
    full = copy.deepcopy(api)
    before_w1 = _node_view(api, "w1")
    api.writes.clear()

    assert sync_node(reconciler(api), "w0") is None
    sync(reconciler(full))

    assert _node_view(api, "w0") == _node_view(full, "w0")
    spec, entry, label = _node_view(api, "w0")
    assert spec["interfaces"][0]["numVfs"] == 4 and '"resourceName":"r"' in entry.replace(" ", "")
    assert label == consts.DEVICE_PLUGIN_LABEL_ENABLED
    assert _node_view(api, "w1") == before_w1  # the other node is the full sync's business
    assert _node_view(full, "w1") != before_w1
    assert {name for _, _, name in api.writes} == {"w0", consts.DEVICE_PLUGIN_CONFIGMAP}


def test_an_unchanged_node_sync_writes_nothing() -> None:
    api = setup_api("w0", "w1")
    api.add(SRIOV_NETWORK_NODE_POLICY, _policy(4))
    sync(reconciler(api))
    _report(api, "w0", IFACES)
    sync(reconciler(api))
    api.writes.clear()
    sync_node(reconciler(api), "w0")
    assert api.writes == []


def test_a_node_gone_or_not_selected_gets_the_full_sync() -> None:
    api = setup_api("w0", "w1")
    r = reconciler(api, debounce=0.0)
    sync(r)
    controller = FakeController()
    r.controller = controller  # type: ignore[assignment]
    api.delete(NODE, "w1")
    api.add(NODE, {"metadata": {"name": "w1", "labels": {}}})  # no longer selected
    api.writes.clear()
    assert sync_node(r, "w1") is None
    assert sync_node(r, "gone") is None
    assert controller.enqueued == [Request(NS, SYNC_KEY_NAME)] * 2
    assert api.writes == []


def test_a_reported_interfaces_change_is_its_nodes_key() -> None:
    r = reconciler(FakeApi())
    assert list(r.node_key({"metadata": {"name": "w7", "namespace": NS}})) == [Request(NS, NODE_KEY_PREFIX + "w7")]


def test_an_unapplicable_policy_fails_the_node_sync_as_it_fails_the_full_sync() -> None:
    """The same judgement as the full sync's: the node's error requeues it, the policy gets its Warning
    Event, and the node's ConfigMap entry and label are still written."""
    api = setup_api("w0")
    rec = FakeRecorder()
    r = reconciler(api, recorder=rec)
    sync(r)
    bad = _policy(4)
    bad["spec"]["nicSelector"]["pfNames"] = ["ens1f0#x-1"]
    api.add(SRIOV_NETWORK_NODE_POLICY, bad)
    _report(api, "w0", IFACES)
    full = copy.deepcopy(api)
    with pytest.raises(RuntimeError, match=r"^node sync incomplete: NodeState w0: SriovNetworkNodePolicy p"):
        sync_node(r, "w0")
    with pytest.raises(RuntimeError, match=r"^policy sync incomplete: NodeState w0: SriovNetworkNodePolicy p"):
        sync(reconciler(full))
    assert [(n, t, reason) for n, t, reason, _ in rec.events] == [("p", "Warning", REASON_POLICY_NOT_APPLIED)]
    assert _node_view(api, "w0") == _node_view(full, "w0")
    assert "w0" in api.get(CONFIG_MAP, consts.DEVICE_PLUGIN_CONFIGMAP, NS)["data"]
