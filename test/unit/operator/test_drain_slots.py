"""The drain controller's slot view (no API server: informer events are fed by hand)."""

from __future__ import annotations

from typing import Any

from sriovop.api.v1 import consts
from sriovop.controllers.drain.slots import SlotView


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def pool(name: str, max_unavailable: int | str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"maxUnavailable": max_unavailable,
                                                  "nodeSelector": {"matchLabels": labels}}}


def state(name: str, rv: int, desired: str = consts.DRAIN_IDLE, current: str = consts.DRAIN_IDLE) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": str(rv), "annotations": {
        consts.NODE_STATE_DRAIN_ANNOTATION: desired, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: current}}}


def view(*objs: tuple[str, dict[str, Any]]) -> SlotView:
    v = SlotView()
    handlers = {"node": v.node_handler(), "pool": v.pool_handler(), "state": v.state_handler()}
    for kind, obj in objs:
        handlers[kind].on_add(obj, True)
    return v


def test_pools_and_held_slots_come_from_events() -> None:
    v = view(("pool", pool("a", 2, p="a")), ("node", node("n1", p="a")), ("node", node("n2", p="a")),
             ("node", node("n3", p="a")), ("node", node("lone")),
             ("state", state("n1", 10, consts.DRAIN_REQUIRED, consts.DRAINING)), ("state", state("n2", 11)))
    assert v.pool_of("n1") == ("a", 2)
    assert v.pool_of("lone") == ("default", 1)
    assert v.occupied("a") == 1
    v.state_handler().on_update(None, state("n1", 12, consts.DRAIN_IDLE, consts.DRAIN_IDLE))
    assert v.occupied("a") == 0


def test_own_grant_counts_until_the_cache_shows_it() -> None:
    v = view(("pool", pool("a", 1, p="a")), ("node", node("n1", p="a")), ("node", node("n2", p="a")),
             ("state", state("n1", 10, consts.DRAIN_REQUIRED)), ("state", state("n2", 11, consts.DRAIN_REQUIRED)))
    assert not v.waiting_behind_full_pool("n2")
    v.record_grant("n1", 20)  # written Draining at rv 20; the cache still shows rv 10, Idle
    assert v.occupied("a") == 1
    assert v.waiting_behind_full_pool("n2")
    v.state_handler().on_update(None, state("n1", 20, consts.DRAIN_REQUIRED, consts.DRAINING))
    assert v.occupied("a") == 1  # now from the cache, not twice
    v.state_handler().on_update(None, state("n1", 25, consts.DRAIN_IDLE, consts.DRAIN_IDLE))
    assert v.occupied("a") == 0
    assert not v.waiting_behind_full_pool("n2")


def test_unsure_cases_fall_back_to_the_server() -> None:
    v = view(("pool", pool("a", 1, p="x")), ("pool", pool("b", 1, q="y")), ("node", node("both", p="x", q="y")),
             ("state", state("both", 1, consts.DRAIN_REQUIRED)))
    assert v.pool_of("both") is None  # in two pools: the controller's live path reports the conflict
    assert not v.waiting_behind_full_pool("both")
    v.node_handler().on_add(node("zed", r="z"), False)
    v.node_handler().on_add(node("ex", p="x"), False)
    v.pool_handler().on_add(pool("c", "150%", r="z"), False)
    assert v.pool_of("zed") is None  # its pool's maxUnavailable is malformed: the careful way
    assert v.pool_of("ex") == ("a", 1)  # other pools' nodes are unaffected
    broken = pool("d", 1)
    broken["spec"]["nodeSelector"] = {"matchExpressions": [{"key": "k", "operator": "Near"}]}
    v.pool_handler().on_add(broken, False)
    assert v.pool_of("ex") is None  # a malformed selector: no node's pool can be told


def test_deleted_node_leaves_its_pool() -> None:
    v = view(("pool", pool("a", 1, p="a")), ("node", node("n1", p="a")),
             ("state", state("n1", 10, consts.DRAIN_REQUIRED, consts.DRAIN_COMPLETE)))
    assert v.occupied("a") == 1
    v.node_handler().on_delete(node("n1", p="a"))
    assert v.occupied("a") == 0


def test_a_freed_slot_wakes_only_its_pools_waiting_nodes_as_many_as_it_can_take() -> None:
    """A release wakes up to twice the free slots of its own pool (in name order), not every waiting
    node of the cluster; the node that released is not counted as a holder even before the view saw
    its release."""
    req, drn = consts.DRAIN_REQUIRED, consts.DRAINING
    objs: list[tuple[str, dict[str, Any]]] = [("pool", pool("a", 2, p="a")), ("pool", pool("b", 1, p="b"))]
    objs += [("node", node(f"a{i}", p="a")) for i in range(6)] + [("node", node(f"b{i}", p="b")) for i in range(3)]
    objs += [("state", state("a0", 1, req, drn)), ("state", state("a1", 2, req, drn))]
    objs += [("state", state(f"a{i}", 10 + i, req)) for i in range(2, 6)]
    objs += [("state", state("b0", 20, req, drn)), ("state", state("b1", 21, req)), ("state", state("b2", 22, req))]
    v = view(*objs)
    assert v.to_wake("a0") == ["a2", "a3"]  # one slot free (a0's, still shown as held): two woken
    v.state_handler().on_update(None, state("a0", 30))
    v.state_handler().on_update(None, state("a1", 31))
    assert v.to_wake("a1") == ["a2", "a3", "a4", "a5"]
    assert v.to_wake("b0") == ["b1", "b2"]
    v.record_grant("b1", 40)
    assert v.to_wake("b0") == []  # b1's grant holds the only slot
    assert SlotView().to_wake("unknown") is None
