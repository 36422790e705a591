"""The rollout watcher's bookkeeping, fed events directly (no API server): which pool holds how many
drain slots, and which grant was for which change. No host is touched."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.hollow.fleet import POOL_LABEL
from test.support.rollout_watch import RolloutWatcher, asked_vfs


def node(name: str, pool: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {POOL_LABEL: pool}}, "spec": {}}


def state(name: str, current: str, num_vfs: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": {consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: current}},
            "spec": {"interfaces": [{"name": "p0", "numVfs": num_vfs}, {"name": "p1", "numVfs": num_vfs}]}}


def feed(w: RolloutWatcher, etype: str, obj: dict[str, Any], on_node: bool = False) -> None:
    with w.cond:  # as the watcher's own threads deliver an event
        (w._on_node if on_node else w._on_state)(etype, obj)
        w.cond.notify_all()


@pytest.fixture
def watcher() -> RolloutWatcher:
    w = RolloutWatcher(None, "ns", "fleet")  # type: ignore[arg-type]  # never started: no client used
    for name in ("a", "b"):
        feed(w, "ADDED", node(name, "bulk"), on_node=True)
        feed(w, "ADDED", state(name, consts.DRAIN_IDLE, 3))
    return w


def test_asked_vfs_is_the_count_every_pf_asks_for() -> None:
    assert asked_vfs(state("a", consts.DRAIN_IDLE, 4)) == 4
    mixed = state("a", consts.DRAIN_IDLE, 4)
    mixed["spec"]["interfaces"][1]["numVfs"] = 5
    assert asked_vfs(mixed) is None
    assert asked_vfs({"spec": {}}) is None


def test_slots_held_are_counted_per_pool_and_the_maximum_kept(watcher: RolloutWatcher) -> None:
    feed(watcher, "MODIFIED", state("a", consts.DRAINING, 3))
    feed(watcher, "MODIFIED", state("b", consts.DRAIN_COMPLETE, 3))
    assert watcher.in_flight("bulk") == ["a", "b"]
    feed(watcher, "MODIFIED", state("a", consts.DRAIN_IDLE, 3))
    assert watcher.in_flight("bulk") == ["b"] and watcher.max_in_flight == {"bulk": 2}


def test_first_grant_after_tells_a_drain_for_the_new_value_from_one_for_the_old(watcher: RolloutWatcher) -> None:
    changed = time.perf_counter()
    feed(watcher, "MODIFIED", state("a", consts.DRAINING, 3))  # still draining for the old value
    old_grant = watcher.first_grant_after(changed, timeout=1)
    assert old_grant > changed
    with pytest.raises(TimeoutError, match="for 4 VFs"):
        watcher.first_grant_after(changed, timeout=0.2, num_vfs=4)

    # The grant for the new value comes later, from another thread: the wait wakes on its event.
    later = threading.Timer(0.2, feed, args=(watcher, "MODIFIED", state("b", consts.DRAINING, 4)))
    later.start()
    new_grant = watcher.first_grant_after(changed, timeout=30, num_vfs=4)
    later.join()
    assert new_grant > old_grant
    assert watcher.first_grant_after(changed, timeout=1) == old_grant  # any value: still the first
    assert watcher.first_grant_after(old_grant, timeout=1) == new_grant  # strictly after `t`
