"""Which events the policy controller acts on, through its real wiring (`setup`) on a fake cache: a
status write on a policy or a pool (the policy-status controller makes them up to once a second in a
rollout) is not a sync; a spec change is the full sync; a NodeState's reported interfaces are its
node's own sync."""

from __future__ import annotations

import copy
from typing import Any

from prometheus_client import CollectorRegistry

from sriovop.api.v1.kinds import (
    SRIOV_NETWORK_NODE_POLICY,
    SRIOV_NETWORK_NODE_STATE,
    SRIOV_NETWORK_POOL_CONFIG,
    SRIOV_OPERATOR_CONFIG,
)
from sriovop.controllers.node_policy import NODE_KEY_PREFIX, SYNC_KEY_NAME, NodePolicyReconciler
from sriovop.runtime.cache import SharedIndexInformer
from sriovop.runtime.controller import Request
from sriovop.runtime.kinds import NODE, Kind
from test.support.controllers_fake_api import FakeApi

NS = "op"


class FakeInformer(SharedIndexInformer):
    """Only what `Controller.watches` uses: the handlers it registers."""

    def __init__(self) -> None:  # no client, no reflector
        self.handlers: list[Any] = []

    def add_event_handler(self, handler: Any, resync_period: float | None = None) -> Any:
        self.handlers.append(handler)
        return None  # no registration: nothing here waits on its has_synced()


class FakeCache:
    def __init__(self) -> None:
        self.informers: dict[str, FakeInformer] = {}

    def informers_for(self, kind: Kind) -> list[FakeInformer]:
        return [self.informers.setdefault(kind.kind, FakeInformer())]


class FakeManager:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.cache = FakeCache()

    def add(self, runnable: Any) -> None:
        pass


def wired() -> tuple[NodePolicyReconciler, FakeCache]:
    r = NodePolicyReconciler(FakeApi(), FakeApi(), NS, debounce=0.0)
    mgr = FakeManager()
    r.setup(mgr)
    assert r.controller is not None
    _drain(r)  # the initial sync
    return r, mgr.cache


def _drain(r: NodePolicyReconciler) -> list[Request]:
    assert r.controller is not None
    queue = r.controller.queue
    out = []
    while len(queue):
        item, _ = queue.get()
        assert item is not None
        out.append(item)
        queue.done(item)
    return out


def update(r: NodePolicyReconciler, cache: FakeCache, kind: Kind, old: dict[str, Any], edit: Any) -> list[Request]:
    new = copy.deepcopy(old)
    new["metadata"]["resourceVersion"] = str(int(old["metadata"]["resourceVersion"]) + 1)
    edit(new)
    for handler in cache.informers[kind.kind].handlers:
        handler.on_update(old, new)
    return _drain(r)


def obj(name: str, **rest: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "resourceVersion": "1", "generation": 1}, **rest}


FULL = [Request(NS, SYNC_KEY_NAME)]


def test_status_writes_on_policies_and_pools_are_not_a_sync_and_spec_changes_are() -> None:
    r, cache = wired()
    for kind in (SRIOV_NETWORK_NODE_POLICY, SRIOV_NETWORK_POOL_CONFIG, SRIOV_OPERATOR_CONFIG):
        old = obj("x", spec={"numVfs": 4}, status={"syncStatus": "InProgress"})
        assert update(r, cache, kind, old, lambda o: o["status"].update(syncStatus="Succeeded")) == [], kind.kind
        assert update(r, cache, kind, old, lambda o: o["metadata"].update(labels={"a": "b"})) == [], kind.kind
        assert update(r, cache, kind, old, lambda o: o["spec"].update(numVfs=8)) == FULL, kind.kind


def test_a_nodestates_reported_interfaces_are_its_nodes_sync_and_nothing_else_of_it_is() -> None:
    r, cache = wired()
    old = obj("w0", spec={}, status={"interfaces": [{"name": "ens1f0", "numVfs": 0}], "syncStatus": "InProgress"})
    assert update(r, cache, SRIOV_NETWORK_NODE_STATE, old,
                  lambda o: o["status"]["interfaces"][0].update(numVfs=4)) == [Request(NS, NODE_KEY_PREFIX + "w0")]
    assert update(r, cache, SRIOV_NETWORK_NODE_STATE, old, lambda o: o["status"].update(syncStatus="Succeeded")) == []
    for handler in cache.informers[SRIOV_NETWORK_NODE_STATE.kind].handlers:
        handler.on_delete(old)
    assert _drain(r) == FULL


def test_a_nodes_label_change_is_the_full_sync() -> None:
    r, cache = wired()
    node = {"metadata": {"name": "w0", "resourceVersion": "1", "labels": {}}}
    assert update(r, cache, NODE, node, lambda o: o["metadata"].update(annotations={"x": "y"})) == []
    assert update(r, cache, NODE, node, lambda o: o["metadata"]["labels"].update(a="1")) == FULL
