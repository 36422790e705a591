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
    v.pool_handler().on_add(pool("c", "150%", r="z"), False)
    assert v.pool_of("both") is None  # a malformed pool: every node goes the careful way


def test_deleted_node_leaves_its_pool() -> None:
    v = view(("pool", pool("a", 1, p="a")), ("node", node("n1", p="a")),
             ("state", state("n1", 10, consts.DRAIN_REQUIRED, consts.DRAIN_COMPLETE)))
    assert v.occupied("a") == 1
    v.node_handler().on_delete(node("n1", p="a"))
    assert v.occupied("a") == 0
