"""The operator's NodeState series: sync status, drain states and VFs per resource, from its cache.

Host: none (a stand-in cache holding NodeState dicts; the series are read through the real registry).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from sriovop.api.v1 import consts
from sriovop.operator.metrics import NODE_STATES, resource_vfs


class _Store:
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def list(self) -> list[Any]:
        return list(self.items)


class _Informer:
    def __init__(self, items: list[Any], synced: bool = True) -> None:
        self.store, self.synced = _Store(items), synced

    def has_synced(self) -> bool:
        return self.synced


class _Cache:
    def __init__(self, *informers: _Informer) -> None:
        self.informers = list(informers)

    def informers_for(self, _kind: Any) -> list[_Informer]:
        return self.informers


def _state(node: str, sync: str | None = None, current: str | None = None, desired: str | None = None,
           groups: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    annotations = {}
    if current:
        annotations[consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT] = current
    if desired:
        annotations[consts.NODE_STATE_DRAIN_ANNOTATION] = desired
    return {"metadata": {"name": node, "annotations": annotations},
            "spec": {"interfaces": [{"pciAddress": "0000:18:00.0",
                                     "vfGroups": [{"resourceName": r, "vfRange": v} for r, v in groups]}]},
            "status": {"syncStatus": sync} if sync else {}}


@pytest.fixture
def watch() -> Iterator[Any]:
    yield NODE_STATES.watch
    NODE_STATES.watch(None)


def _value(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def test_sync_and_drain_states_are_one_hot_per_node(watch: Any) -> None:
    watch(_Cache(_Informer([
        _state("worker-1", "Failed", consts.DRAINING, consts.DRAIN_REQUIRED),
        _state("worker-2", "Succeeded", consts.DRAIN_IDLE, consts.DRAIN_IDLE),
        _state("worker-3")])), "openshift.io")
    assert _value("sriovop_node_state_sync_status", node="worker-1", status="Failed") == 1
    assert _value("sriovop_node_state_sync_status", node="worker-1", status="Succeeded") == 0
    assert _value("sriovop_node_state_sync_status", node="worker-2", status="Succeeded") == 1
    assert _value("sriovop_node_state_sync_status", node="worker-3", status="Failed") is None
    assert _value("sriovop_node_drain_state", node="worker-1", state="Draining") == 1
    assert _value("sriovop_node_drain_state", node="worker-1", state="Idle") == 0
    assert _value("sriovop_node_drain_desired_state", node="worker-1", state="Drain_Required") == 1
    assert _value("sriovop_node_drain_state", node="worker-3", state="Idle") is None


def test_vfs_per_resource_add_up_groups_and_carry_the_prefix(watch: Any) -> None:
    watch(_Cache(_Informer([_state("w", groups=(("intelnics", "0-7"), ("dpdk", "0-3"), ("intelnics", "8-9")))])),
          "openshift.io")
    assert _value("sriovop_node_resource_vfs", node="w", resource="openshift.io/intelnics") == 10
    assert _value("sriovop_node_resource_vfs", node="w", resource="openshift.io/dpdk") == 4


def test_a_malformed_range_counts_nothing() -> None:
    assert resource_vfs(_state("w", groups=(("a", "7-2"), ("b", "x"), ("c", "1-1"))), "p") == {"p/c": 1}


def test_unsynced_or_no_cache_gives_empty_families(watch: Any) -> None:
    watch(_Cache(_Informer([_state("w", "Failed")], synced=False)), "p")
    assert _value("sriovop_node_state_sync_status", node="w", status="Failed") is None
    watch(None)
    names = {m.name for m in REGISTRY.collect()}
    assert "sriovop_node_state_sync_status" in names  # described even when empty
